package planner

import (
	"errors"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
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
