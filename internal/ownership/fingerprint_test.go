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

// TestHasFingerprint: HasFingerprint agrees with Fingerprint whether the
// fieldsV1 are spelled as the API server writes them or otherwise, and
// decodes nothing for the server's spelling (far fewer allocations than
// Fingerprint, which decodes every entry's fields).
func TestHasFingerprint(t *testing.T) {
	const canonical = `{"f:data":{".":{},"f:a":{},"f:b":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`
	base := []metav1.ManagedFieldsEntry{entry("syncd-web", apply, "", 1, canonical), entry("controller", update, "status", 9, `{"f:status":{}}`)}
	want := Fingerprint(base, "syncd-web")
	tests := map[string]struct {
		mfs  []metav1.ManagedFieldsEntry
		same bool
	}{
		"as the API server spells it":   {mfs: base, same: true},
		"spelled otherwise":             {mfs: []metav1.ManagedFieldsEntry{entry("syncd-web", apply, "", 1, `{"f:metadata":{"f:labels":{"f:app":{}}}, "f:data":{"f:b":{},"f:a":{},".":{}}}`)}, same: true},
		"a field taken away":            {mfs: []metav1.ManagedFieldsEntry{entry("syncd-web", apply, "", 1, `{"f:data":{".":{},"f:a":{}},"f:metadata":{"f:labels":{"f:app":{}}}}`)}},
		"written again":                 {mfs: []metav1.ManagedFieldsEntry{entry("syncd-web", apply, "", 2, canonical)}},
		"fields that do not decode":     {mfs: []metav1.ManagedFieldsEntry{entry("syncd-web", apply, "", 1, `{"f:data":`)}},
		"no entry of the manager":       {mfs: base[1:]},
		"only another manager's change": {mfs: []metav1.ManagedFieldsEntry{base[0], entry("controller", update, "status", 10, `{"f:status":{"f:x":{}}}`)}, same: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := HasFingerprint(tc.mfs, "syncd-web", want); got != tc.same {
				t.Errorf("HasFingerprint = %v, want %v", got, tc.same)
			}
			if got := Fingerprint(tc.mfs, "syncd-web") == want; got != tc.same {
				t.Errorf("Fingerprint equal = %v, want %v", got, tc.same)
			}
		})
	}

	decoded := testing.AllocsPerRun(100, func() { Fingerprint(base, "syncd-web") })
	raw := testing.AllocsPerRun(100, func() { HasFingerprint(base, "syncd-web", want) })
	if raw*2 > decoded {
		t.Errorf("HasFingerprint of the server's spelling: %.0f allocations, Fingerprint %.0f; want it to decode nothing (under half)", raw, decoded)
	}
}

// TestHolding: a manager's holding digest changes with what it holds
// (fields, operation, subresource) and not with when it last wrote them;
// HasHolding agrees with Holding however the fieldsV1 are spelled.
func TestHolding(t *testing.T) {
	const fields = `{"f:data":{"f:color":{}}}`
	base := []metav1.ManagedFieldsEntry{entry("operator", update, "", 1, fields), entry("syncd-web", apply, "", 2, `{"f:data":{"f:size":{}}}`)}
	other := func(mut func(*metav1.ManagedFieldsEntry)) []metav1.ManagedFieldsEntry {
		e := entry("operator", update, "", 1, fields)
		mut(&e)
		return []metav1.ManagedFieldsEntry{e}
	}
	tests := map[string]struct {
		mfs  []metav1.ManagedFieldsEntry
		same bool
	}{
		"same entries":                 {mfs: base, same: true},
		"the value written again":      {mfs: other(func(e *metav1.ManagedFieldsEntry) { tm := metav1.NewTime(e.Time.Add(time.Hour)); e.Time = &tm }), same: true},
		"fieldsV1 spelled otherwise":   {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1.Raw = []byte(`{"f:data": {"f:color": {}}}`) }), same: true},
		"syncd's own entry changed":    {mfs: append(other(func(*metav1.ManagedFieldsEntry) {}), entry("syncd-web", apply, "", 9, `{}`)), same: true},
		"the field let go":             {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1.Raw = []byte(`{"f:data":{}}`) })},
		"another field taken as well":  {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.FieldsV1.Raw = []byte(`{"f:data":{"f:color":{},"f:size":{}}}`) })},
		"held through a subresource":   {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.Subresource = "scale" })},
		"the manager's entry is gone":  {mfs: base[1:]},
		"held by Apply, not by Update": {mfs: other(func(e *metav1.ManagedFieldsEntry) { e.Operation = apply })},
	}
	want := Holding(base, "operator")
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := Holding(tc.mfs, "operator")
			if got == "" {
				t.Fatal("empty digest")
			}
			if (got == want) != tc.same {
				t.Errorf("holding equal = %v, want %v", got == want, tc.same)
			}
			if HasHolding(tc.mfs, "operator", want) != tc.same {
				t.Errorf("HasHolding = %v, want %v", !tc.same, tc.same)
			}
		})
	}
}
