package planner

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Reslice cuts a slice for manager m holding exactly set (plus identity and
// the keys of list items) out of the object's desired state. The applier
// uses it to give up yielded fields and to build the intermediate slices
// of an ownership move.
func (o *Object) Reslice(m FieldManager, set *fieldpath.Set) (Slice, error) {
	if o.Typed == nil {
		return Slice{}, errors.New(o.Ref.String() + ": no typed value to cut a slice from")
	}
	return makeSlice(o.Desired, o.Typed, m, set.Difference(identity))
}

// ResliceFrom cuts a slice for manager m holding exactly set out of src (a
// live version of the object), typed with the object's schema. The applier
// uses it to hold fields at their live value during a handoff.
func (o *Object) ResliceFrom(src *unstructured.Unstructured, m FieldManager, set *fieldpath.Set) (Slice, error) {
	if o.Typed == nil {
		return Slice{}, errors.New(o.Ref.String() + ": no typed value to cut a slice from")
	}
	tv := typed.AsTypedUnvalidated(value.NewValueInterface(src.Object), o.Typed.Schema(), o.Typed.TypeRef())
	return makeSlice(o.Desired, tv, m, set.Difference(identity))
}
