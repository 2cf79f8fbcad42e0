package ownership

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

const (
	apply  = metav1.ManagedFieldsOperationApply
	update = metav1.ManagedFieldsOperationUpdate
)

// setString compares sets by their printed members.
var setString = cmp.Transformer("Set", func(s *fieldpath.Set) string {
	if s == nil {
		return "<nil>"
	}
	return s.String()
})

// errString compares errors by text.
var errString = cmp.Comparer(func(a, b error) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return a.Error() == b.Error()
})

func set(t *testing.T, js string) *fieldpath.Set {
	t.Helper()
	s := &fieldpath.Set{}
	if err := s.FromJSON(strings.NewReader(js)); err != nil {
		t.Fatal(err)
	}
	return s
}

// mf is a managedFields entry with fields js ("" for none).
func mf(manager string, op metav1.ManagedFieldsOperationType, sub, js string) metav1.ManagedFieldsEntry {
	e := metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: sub, APIVersion: "v1"}
	if js != "" {
		e.FieldsType = "FieldsV1"
		e.FieldsV1 = &metav1.FieldsV1{Raw: []byte(js)}
	}
	return e
}

func object(entries ...metav1.ManagedFieldsEntry) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("ConfigMap")
	u.SetName("web")
	u.SetManagedFields(entries)
	return u
}

const (
	dataA   = `{"f:data":{"f:a":{}}}`
	dataB   = `{"f:data":{"f:b":{}}}`
	replica = `{"f:spec":{"f:replicas":{}}}`
	// badFields is JSON (an unstructured object holds nothing else) that
	// is no field set: "data" has no "f:" prefix.
	badFields = `{"data":{}}`
)

func TestDecode(t *testing.T) {
	when := metav1.NewTime(time.Date(2026, 12, 1, 20, 0, 0, 0, time.FixedZone("CET", 3600)))
	utc := when.UTC()
	timed := mf("syncd-web", apply, "", dataA)
	timed.Time = &when
	otherType := mf("old", update, "", dataA)
	otherType.FieldsType = "FieldsV2"
	tests := map[string]struct {
		u    *unstructured.Unstructured
		want Ownership
	}{
		"nil object": {nil, Ownership{}},
		"no entries": {object(), Ownership{}},
		"entries in the object's order, time in UTC": {
			object(timed, mf("kubectl", update, "", dataB), mf("hpa", update, "scale", replica)),
			Ownership{Entries: []Entry{
				{Manager: "syncd-web", Operation: apply, APIVersion: "v1", Time: &utc, Set: set(t, dataA)},
				{Manager: "kubectl", Operation: update, APIVersion: "v1", Set: set(t, dataB)},
				{Manager: "hpa", Operation: update, Subresource: "scale", APIVersion: "v1", Set: set(t, replica)},
			}},
		},
		"no FieldsV1 owns nothing": {
			object(mf("empty", update, "", "")),
			Ownership{Entries: []Entry{{Manager: "empty", Operation: update, APIVersion: "v1", Set: &fieldpath.Set{}}}},
		},
		"bad FieldsV1 is invalid, the others decode": {
			object(mf("broken", update, "", badFields), mf("syncd-web", apply, "", dataA)),
			Ownership{
				Entries: []Entry{{Manager: "syncd-web", Operation: apply, APIVersion: "v1", Set: set(t, dataA)}},
				Invalid: []InvalidEntry{{Manager: "broken", Operation: update, Err: decodeErr(t, badFields)}},
			},
		},
		"fieldsType other than FieldsV1 is invalid": {
			object(otherType),
			Ownership{Invalid: []InvalidEntry{{Manager: "old", Operation: update, Err: errors.New(`fieldsType "FieldsV2" is not FieldsV1`)}}},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, Decode(tt.u), setString, errString); diff != "" {
				t.Errorf("Decode (-want +got):\n%s", diff)
			}
		})
	}
}

// decodeErr is the error structured-merge-diff gives for js.
func decodeErr(t *testing.T, js string) error {
	t.Helper()
	err := (&fieldpath.Set{}).FromJSON(strings.NewReader(js))
	if err == nil {
		t.Fatalf("%s decodes", js)
	}
	return err
}

func TestInvalidEntryError(t *testing.T) {
	cause := errors.New("unexpected end of JSON input")
	e := InvalidEntry{Manager: "broken", Operation: update, Err: cause}
	want := `managedFields entry of "broken" (Update): unexpected end of JSON input`
	if diff := cmp.Diff(want, e.Error()); diff != "" {
		t.Errorf("Error (-want +got):\n%s", diff)
	}
	if !errors.Is(e, cause) {
		t.Errorf("errors.Is(%v, cause) = false, want true", e)
	}
}

func TestQueries(t *testing.T) {
	o := Decode(object(
		mf("syncd-web", apply, "", dataA),
		mf("syncd-web", update, "", replica),
		mf("kubectl", update, "", dataB),
		mf("syncd-web-status", apply, "status", `{"f:status":{}}`),
		mf("broken", update, "", badFields),
	))
	tests := map[string]struct {
		got, want any
	}{
		"Applied: the Apply entry on the main resource": {o.Applied("syncd-web"), set(t, dataA)},
		"Applied: an Update entry is not applied":       {o.Applied("kubectl"), fieldpath.NewSet()},
		"Applied: a subresource entry is not applied":   {o.Applied("syncd-web-status"), fieldpath.NewSet()},
		"Applied: no entry":                             {o.Applied("nobody"), fieldpath.NewSet()},
		"Has: an Update entry":                          {o.Has("kubectl"), true},
		"Has: no entry":                                 {o.Has("nobody"), false},
		"Has: an entry that did not decode":             {o.Has("broken"), false},
		"OwnedExcept: everyone but syncd-web*": {
			o.OwnedExcept(func(m string) bool { return strings.HasPrefix(m, "syncd-web") }), set(t, dataB),
		},
		"OwnedExcept: everyone": {
			o.OwnedExcept(func(string) bool { return false }), set(t, `{"f:data":{"f:a":{},"f:b":{}},"f:spec":{"f:replicas":{}},"f:status":{}}`),
		},
		"MainResource": {managers(o.MainResource()), []string{"syncd-web", "syncd-web", "kubectl"}},
		"All":          {managers(collect(o)), []string{"syncd-web", "syncd-web", "kubectl", "syncd-web-status"}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got, setString); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func collect(o Ownership) []Entry {
	var out []Entry
	for e := range o.All() {
		out = append(out, e)
	}
	return out
}

func managers(es []Entry) []string {
	var out []string
	for _, e := range es {
		out = append(out, e.Manager)
	}
	return out
}

func TestOwners(t *testing.T) {
	o := Decode(object(
		mf("zeta", update, "", `{"f:spec":{"f:replicas":{}}}`),
		mf("alpha", apply, "", `{"f:spec":{"f:replicas":{},"f:template":{}}}`),
		mf("alpha", update, "scale", `{"f:spec":{"f:replicas":{}}}`),
		mf("alpha", update, "", `{"f:metadata":{"f:annotations":{"f:x":{}}}}`),
	))
	type owner struct {
		Manager     string
		Operation   metav1.ManagedFieldsOperationType
		Subresource string
	}
	ownersOf := func(es []Entry) []owner {
		var out []owner
		for _, e := range es {
			out = append(out, owner{e.Manager, e.Operation, e.Subresource})
		}
		return out
	}
	tests := map[string]struct {
		got, want []owner
	}{
		"sorted by manager, operation, subresource": {
			ownersOf(o.Owners(fieldpath.MakePathOrDie("spec", "replicas"))),
			[]owner{{"alpha", apply, ""}, {"alpha", update, "scale"}, {"zeta", update, ""}},
		},
		"below an atomic field owned whole": {
			ownersOf(o.Owners(fieldpath.MakePathOrDie("spec", "template", "spec"))),
			[]owner{{"alpha", apply, ""}},
		},
		"the owner of a key below owns the map": {
			ownersOf(o.Owners(fieldpath.MakePathOrDie("metadata", "annotations"))),
			[]owner{{"alpha", update, ""}},
		},
		"but not the map itself": {
			ownersOf(o.OwnersOfItself(fieldpath.MakePathOrDie("metadata", "annotations"))),
			nil,
		},
		"no owner": {ownersOf(o.Owners(fieldpath.MakePathOrDie("spec", "paused"))), nil},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

func TestOwns(t *testing.T) {
	// The server's set: the ports item carries the defaulted protocol in
	// its key; .spec.selector is atomic (owned whole).
	server := set(t, `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}}},"f:selector":{}}}`)
	declaredPort := fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80), "targetPort")
	tests := map[string]struct {
		path fieldpath.Path
		want bool
	}{
		"key subset matches defaulted key": {declaredPort, true},
		"atomic ancestor":                  {fieldpath.MakePathOrDie("spec", "selector", "app"), true},
		"not owned":                        {fieldpath.MakePathOrDie("spec", "type"), false},
		"other item":                       {fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 81), "targetPort"), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := Owns(server, tt.path); got != tt.want {
				t.Errorf("Owns(%s) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

func TestOwnsItself(t *testing.T) {
	// An empty map declared in Git is owned by who owns the map itself,
	// not by the managers of keys inside it.
	server := set(t, `{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}}},"f:selector":{}}}`)
	annotations := fieldpath.MakePathOrDie("metadata", "annotations")
	tests := map[string]struct {
		set  *fieldpath.Set
		path fieldpath.Path
		want bool
	}{
		"the manager of the map":           {set(t, `{"f:metadata":{"f:annotations":{}}}`), annotations, true},
		"the manager of a key below":       {set(t, `{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`), annotations, false},
		"the manager of the map and a key": {set(t, `{"f:metadata":{"f:annotations":{".":{},"f:x":{}}}}`), annotations, true},
		"an atomic ancestor owned whole":   {server, fieldpath.MakePathOrDie("spec", "selector", "matchLabels"), true},
		"list items below, not the list":   {server, fieldpath.MakePathOrDie("spec", "ports"), false},
		"the empty path":                   {server, fieldpath.Path{}, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := OwnsItself(tt.set, tt.path); got != tt.want {
				t.Errorf("OwnsItself(%s) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}
}

func TestHandoff(t *testing.T) {
	type managerName string
	tests := map[string]struct {
		got, want any
	}{
		"HandoffManager keeps the type":   {HandoffManager(managerName("syncd-web")), managerName("syncd-web-handoff")},
		"HandoffOwner of a handoff":       {pair(HandoffOwner("syncd-web-handoff")), pair("syncd-web", true)},
		"HandoffOwner of another manager": {pair(HandoffOwner("syncd-web")), pair("syncd-web", false)},
		"IsHandoff":                       {[]bool{IsHandoff("syncd-web-handoff"), IsHandoff("syncd-web")}, []bool{true, false}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, tt.got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
}

type ownerOK struct {
	Owner string
	OK    bool
}

func pair(owner string, ok bool) ownerOK { return ownerOK{owner, ok} }
