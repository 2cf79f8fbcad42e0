package ownership

import (
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// entry is a managedFields entry of manager with op, at second sec, owning
// the raw fieldsV1 js.
func entry(manager string, op metav1.ManagedFieldsOperationType, sub string, sec int, js string) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(time.Date(2026, 12, 5, 0, 0, sec, 0, time.UTC))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "v1", Time: &t,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(js)}}
}

// TestFingerprint: a manager's fingerprint changes with its own entry
// (fields, time, API version, operation) and with nothing else: not
// with other managers' entries, their order, or how the fieldsV1 JSON
// is spelled.
func TestFingerprint(t *testing.T) {
	const fields = `{"f:data":{"f:a":{},"f:b":{}}}`
	base := []metav1.ManagedFieldsEntry{entry("syncd-web", apply, "", 1, fields)}
	withStatus := append([]metav1.ManagedFieldsEntry{entry("controller", update, "status", 9, `{"f:status":{}}`)}, base...)
	other := func(mut func(*metav1.ManagedFieldsEntry)) []metav1.ManagedFieldsEntry {
		e := entry("syncd-web", apply, "", 1, fields)
		mut(&e)
		return []metav1.ManagedFieldsEntry{e}
	}
	tests := map[string]struct {
		mfs  []metav1.ManagedFieldsEntry
		same bool
	}{
		"same entry":                     {mfs: base, same: true},
		"another manager wrote status":   {mfs: withStatus, same: true},
		"another manager applied too":    {mfs: append(base, entry("syncd-other", apply, "", 5, fields)), same: true},
		"fieldsV1 spelled otherwise":     {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1.Raw = []byte(`{"f:data":{"f:b":{}, "f:a":{}}}`) }), same: true},
		"a field taken away":             {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1.Raw = []byte(`{"f:data":{"f:a":{}}}`) })},
		"written again":                  {mfs: other(func(e *metav1.ManagedFieldsEntry) { tm := metav1.NewTime(e.Time.Add(time.Second)); e.Time = &tm })},
		"another API version":            {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.APIVersion = "v2" })},
		"an Update entry of the manager": {mfs: append(base, entry("syncd-web", update, "", 1, fields))},
		"no entry":                       {mfs: nil},
	}
	want := Fingerprint(base, "syncd-web")
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Fingerprint(tc.mfs, "syncd-web")
			if got == "" {
				t.Fatal("empty fingerprint")
			}
			if (got == want) != tc.same {
				t.Errorf("fingerprint equal = %v, want %v", got == want, tc.same)
			}
		})
	}
}
