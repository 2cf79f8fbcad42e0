package drift

import (
	"slices"

	"syncd.dev/syncd/internal/directive"
	"syncd.dev/syncd/internal/planner"
)

// declaredObject is everything the detector judges a live copy of one plan
// object against: what Git declares of it, without the rendered object.
// The watcher keeps one per watched object instead of the plan, so that a
// plan's rendered objects, typed values and field sets are freed once it
// was applied, and are not held beside the next plan while that one is
// built and applied.
type declaredObject struct {
	ref planner.ObjectRef
	// declaredBy is the manager of the object's first slice ("" without
	// one): the manager object-level findings name.
	declaredBy string
	// git are the object's directives in Git (exempt).
	git directive.Set
	// leaves are the object's declared leaves, with Git's values.
	leaves []declared
	// slices are the object's slices by manager and hash, in plan order.
	slices []sliceVersion
}

// sliceVersion is one manager's slice of an object at one version.
type sliceVersion struct {
	manager planner.FieldManager
	hash    string
}

// declare returns what Git declares of obj.
func declare(obj *planner.Object) *declaredObject {
	return declareWith(obj, declaredLeaves(obj, nil))
}

// declareIn is declare with the leaves' paths kept in paths, shared with
// the other objects of the plan.
func declareIn(obj *planner.Object, paths declaredPaths) *declaredObject {
	return declareWith(obj, declaredLeaves(obj, paths))
}

// declareWith is declare with obj's declared leaves given.
func declareWith(obj *planner.Object, leaves []declared) *declaredObject {
	d := &declaredObject{ref: obj.Ref, git: directive.Of(obj.Desired), leaves: leaves,
		slices: make([]sliceVersion, len(obj.Slices))}
	for i, s := range obj.Slices {
		d.slices[i] = sliceVersion{manager: s.Manager, hash: s.Hash}
	}
	if len(obj.Slices) > 0 {
		d.declaredBy = string(obj.Slices[0].Manager)
	}
	return d
}

// declares reports whether obj declares what d does: the same slices (the
// same managers with the same hashes: the same fields with the same
// values) and the same directives.
func (d *declaredObject) declares(obj *planner.Object) bool {
	return slices.EqualFunc(d.slices, obj.Slices, func(x sliceVersion, y planner.Slice) bool {
		return x.manager == y.Manager && x.hash != "" && x.hash == y.Hash
	}) && d.git == directive.Of(obj.Desired)
}

// valueDriftManagers returns the managers whose slices declare a field fs
// reports as value-drift: only those need the server's form of their
// values (Normalizer).
func valueDriftManagers(fs []Finding) map[planner.FieldManager]bool {
	want := map[planner.FieldManager]bool{}
	for _, f := range fs {
		if f.Class == ValueDrift && f.Path != "" {
			want[planner.FieldManager(f.DeclaredBy)] = true
		}
	}
	return want
}
