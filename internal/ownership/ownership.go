package ownership

import (
	"bytes"
	"fmt"
	"iter"
	"slices"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Entry is one decoded managedFields entry.
type Entry struct {
	// Manager is the field manager that wrote the entry.
	Manager string
	// Operation is Apply or Update.
	Operation metav1.ManagedFieldsOperationType
	// Subresource is the subresource the manager wrote through ("status",
	// "scale"), empty for the main resource.
	Subresource string
	// APIVersion is the version the entry's fields are expressed in.
	APIVersion string
	// Time is when the manager last changed its fields (UTC, second
	// precision); nil when the entry has none.
	Time *time.Time
	// Set is the fields the entry owns; empty, never nil, when the entry
	// has no FieldsV1.
	Set *fieldpath.Set
}

// IsApply reports whether e is an Apply entry on the main resource.
func (e Entry) IsApply() bool {
	return e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
}

// InvalidEntry is a managedFields entry whose fields could not be decoded.
type InvalidEntry struct {
	// Manager, Operation and Subresource name the entry as Entry does.
	Manager     string
	Operation   metav1.ManagedFieldsOperationType
	Subresource string
	// Err says why the fields could not be decoded.
	Err error
}

// Error names the entry and why its fields could not be decoded.
func (e InvalidEntry) Error() string {
	return fmt.Sprintf("managedFields entry of %q (%s): %v", e.Manager, e.Operation, e.Err)
}

// Unwrap returns the decoding error.
func (e InvalidEntry) Unwrap() error { return e.Err }

// Ownership is an object's managedFields, decoded.
type Ownership struct {
	// Entries are the entries that decoded, in the object's order.
	Entries []Entry
	// Invalid are the entries that did not decode, in the object's order.
	Invalid []InvalidEntry
}

// Decode decodes u's managedFields. A nil u has no entries.
func Decode(u *unstructured.Unstructured) Ownership {
	if u == nil {
		return Ownership{}
	}
	return DecodeEntries(u.GetManagedFields())
}

// DecodeEntries decodes managedFields entries (see the package doc for the
// error policy).
func DecodeEntries(mfs []metav1.ManagedFieldsEntry) Ownership {
	var o Ownership
	for _, mf := range mfs {
		e, err := decodeEntry(mf)
		if err != nil {
			o.Invalid = append(o.Invalid, InvalidEntry{Manager: mf.Manager, Operation: mf.Operation, Subresource: mf.Subresource, Err: err})
			continue
		}
		o.Entries = append(o.Entries, e)
	}
	return o
}

// decodeEntry decodes one entry; the error says why its fields do not
// decode.
func decodeEntry(mf metav1.ManagedFieldsEntry) (Entry, error) {
	e := Entry{Manager: mf.Manager, Operation: mf.Operation, Subresource: mf.Subresource, APIVersion: mf.APIVersion, Set: &fieldpath.Set{}}
	if mf.Time != nil {
		t := mf.Time.UTC()
		e.Time = &t
	}
	if mf.FieldsV1 == nil {
		return e, nil
	}
	if mf.FieldsType != "" && mf.FieldsType != "FieldsV1" {
		return Entry{}, fmt.Errorf("fieldsType %q is not FieldsV1", mf.FieldsType)
	}
	if err := e.Set.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
		return Entry{}, err
	}
	return e, nil
}

// All yields the decoded entries in the object's order.
func (o Ownership) All() iter.Seq[Entry] {
	return slices.Values(o.Entries)
}

// Applied returns the set manager m owns through Apply on the main
// resource; empty when it has none.
func (o Ownership) Applied(m string) *fieldpath.Set {
	for _, e := range o.Entries {
		if e.Manager == m && e.IsApply() {
			return e.Set
		}
	}
	return fieldpath.NewSet()
}

// Has reports whether m has a decoded entry of any kind.
func (o Ownership) Has(m string) bool {
	return slices.ContainsFunc(o.Entries, func(e Entry) bool { return e.Manager == m })
}

// OwnedExcept returns the union of every entry's set except those whose
// manager skip reports true for.
func (o Ownership) OwnedExcept(skip func(manager string) bool) *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range o.Entries {
		if !skip(e.Manager) {
			out = out.Union(e.Set)
		}
	}
	return out
}

// MainResource returns the entries on the main resource (no subresource).
func (o Ownership) MainResource() []Entry {
	var out []Entry
	for _, e := range o.Entries {
		if e.Subresource == "" {
			out = append(out, e)
		}
	}
	return out
}
