package planner

import (
	"sort"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// ManagerMove is a change of field manager for fields of one object between
// two plans: fields From owned in the previous plan that, in the next, To
// owns and From does not, and that To did not already own (list-item keys
// shared by both managers are not moves). The applier moves them without letting
// them disappear (apply the fields as To first, then From's new slice).
type ManagerMove struct {
	Ref    ObjectRef
	From   FieldManager
	To     FieldManager
	Fields *fieldpath.Set
}

// Migrations lists the ownership moves between prev and next, for objects
// present in both, sorted by object and then by manager names. Fields that
// leave Git altogether, and objects added or removed, are not moves: they
// are the applier's handoff and prune business.
func Migrations(prev, next *Plan) []ManagerMove {
	if prev == nil || next == nil {
		return nil
	}
	type key struct{ g, k, ns, n string }
	keyOf := func(r ObjectRef) key { return key{r.Group, r.Kind, r.Namespace, r.Name} }
	before := map[key]Object{}
	for _, o := range prev.Objects {
		before[keyOf(o.Ref)] = o
	}
	var moves []ManagerMove
	for _, o := range next.Objects {
		old, ok := before[keyOf(o.Ref)]
		if !ok {
			continue
		}
		nextSets := map[FieldManager]*fieldpath.Set{}
		for _, s := range o.Slices {
			nextSets[s.Manager] = s.Fields
		}
		prevSets := map[FieldManager]*fieldpath.Set{}
		for _, s := range old.Slices {
			prevSets[s.Manager] = s.Fields
		}
		for _, from := range old.Slices {
			stays := nextSets[from.Manager]
			if stays == nil {
				stays = fieldpath.NewSet()
			}
			leaving := from.Fields.Difference(stays)
			if leaving.Empty() {
				continue
			}
			for _, to := range o.Slices {
				if to.Manager == from.Manager {
					continue
				}
				moved := leaving.Intersection(to.Fields)
				if had := prevSets[to.Manager]; had != nil {
					moved = moved.Difference(had)
				}
				if moved.Empty() {
					continue
				}
				moves = append(moves, ManagerMove{Ref: o.Ref, From: from.Manager, To: to.Manager, Fields: moved})
			}
		}
	}
	sort.SliceStable(moves, func(i, j int) bool {
		a, b := moves[i], moves[j]
		if a.Ref != b.Ref {
			return a.Ref.Less(b.Ref)
		}
		if a.From != b.From {
			return a.From < b.From
		}
		return a.To < b.To
	})
	return moves
}
