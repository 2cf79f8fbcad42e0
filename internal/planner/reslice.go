package planner

import (
	"errors"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Typed returns Desired as a structured-merge-diff typed value, for
// cutting other slices out of it (nil when the object was not typed).
// It is made on each call, over Desired's maps, from the type the
// planner typed the object with: the plan keeps that type, shared by the
// objects of a kind, rather than a typed value per object.
func (o *Object) Typed() *typed.TypedValue {
	if o.typ == nil {
		return nil
	}
	return typed.AsTypedUnvalidated(value.NewValueInterface(o.Desired.Object), o.typ.Schema, o.typ.TypeRef)
}

// SchemaChecked reports whether the planner typed Desired with a schema
// (the cluster's, a CustomResourceDefinition's or the built-in one): then
// a field the schema does not declare, and a list entry given twice, were
// refused when the plan was made. False for an object of a kind typed
// with the deduced schema, and for one not typed at all.
func (o *Object) SchemaChecked() bool { return o.typ != nil && !o.deduced }

// Reslice cuts a slice for manager m holding exactly set (plus identity and
// the keys of list items) out of the object's desired state. The applier
// uses it to give up yielded fields and to build the intermediate slices
// of an ownership move.
func (o *Object) Reslice(m FieldManager, set *fieldpath.Set) (Slice, error) {
	tv := o.Typed()
	if tv == nil {
		return Slice{}, errors.New(o.Ref.String() + ": no typed value to cut a slice from")
	}
	if o.deduced {
		return o.wholeSlice(o.Desired, m, set)
	}
	return makeSlice(o.Desired, tv, m, set.Difference(identity))
}

// wholeSlice serves Reslice for objects without a known schema, whose
// typed value cannot be cut: an empty set gives an identity-only slice, a
// set covering every field gives the whole object, anything else is an
// error.
func (o *Object) wholeSlice(src *unstructured.Unstructured, m FieldManager, set *fieldpath.Set) (Slice, error) {
	full, err := o.Typed().ToFieldSet()
	if err != nil {
		return Slice{}, fmt.Errorf("%s: field set: %w", o.Ref, err)
	}
	full = full.Difference(identity)
	set = set.Difference(identity)
	var u *unstructured.Unstructured
	switch {
	case set.Empty():
		u = &unstructured.Unstructured{Object: map[string]any{}}
		u.SetAPIVersion(src.GetAPIVersion())
		u.SetKind(src.GetKind())
		u.SetName(src.GetName())
		if ns := src.GetNamespace(); ns != "" {
			u.SetNamespace(ns)
		}
		full = fieldpath.NewSet()
	case full.Difference(set).Empty():
		u = src.DeepCopy()
	default:
		return Slice{}, fmt.Errorf("%s: no schema is known for %s, so its fields cannot be divided between managers", o.Ref, o.Ref.GroupKind())
	}
	hash, err := hashObject(u)
	if err != nil {
		return Slice{}, fmt.Errorf("%s: %w", o.Ref, err)
	}
	return Slice{Manager: m, Object: u, Fields: full, Hash: hash}, nil
}

// ResliceFrom cuts a slice for manager m holding exactly set out of src (a
// live version of the object), typed with the object's schema. The applier
// uses it to hold fields at their live value during a handoff.
func (o *Object) ResliceFrom(src *unstructured.Unstructured, m FieldManager, set *fieldpath.Set) (Slice, error) {
	if o.typ == nil {
		return Slice{}, errors.New(o.Ref.String() + ": no typed value to cut a slice from")
	}
	if o.deduced {
		if !set.Difference(identity).Empty() {
			return Slice{}, fmt.Errorf("%s: no schema is known for %s, so fields of the live object cannot be cut out of it", o.Ref, o.Ref.GroupKind())
		}
		return o.wholeSlice(o.Desired, m, set)
	}
	tv := typed.AsTypedUnvalidated(value.NewValueInterface(src.Object), o.typ.Schema, o.typ.TypeRef)
	return makeSlice(o.Desired, tv, m, set.Difference(identity))
}
