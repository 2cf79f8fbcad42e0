package applier

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// keepIgnored returns the slices to send to the existing object live with
// the fields the app's ignore rules match (ApplyOptions.Ignore) at their
// live value, so that what another writer or a webhook changed there is
// not reverted; a matched field the live object no longer has is left out
// of its slice (sending it would put it back). live must carry values.
func (r *objectRun) keepIgnored(obj *planner.Object, live *unstructured.Unstructured, sl []planner.Slice) ([]planner.Slice, error) {
	if r.ao.Ignore == nil {
		return sl, nil
	}
	own := ownership.Decode(live)
	ours := map[string]bool{}
	for _, s := range sl {
		ours[string(s.Manager)] = true
		ours[string(ownership.HandoffManager(s.Manager))] = true
	}
	out := make([]planner.Slice, len(sl))
	for i, s := range sl {
		keep, drop := r.ignoredLeaves(obj.Ref, live, s, own, ours)
		next, err := resliceIgnored(obj, s, keep, drop, live)
		if err != nil {
			return nil, err
		}
		out[i] = next
	}
	return out, nil
}

// ignoredLeaves returns the leaves of slice s the ignore rules match:
// those live holds (keep) and those it does not (drop).
func (r *objectRun) ignoredLeaves(ref planner.ObjectRef, live *unstructured.Unstructured, s planner.Slice, own ownership.Ownership, ours map[string]bool) (keep []fieldpath.Path, drop *fieldpath.Set) {
	drop = fieldpath.NewSet()
	s.Fields.Leaves().Iterate(func(p fieldpath.Path) {
		var others []string
		for _, e := range own.Owners(p) {
			if !ours[e.Manager] {
				others = append(others, e.Manager)
			}
		}
		if !r.ao.Ignore.Ignores(ref, p, others) {
			return
		}
		if _, ok := paths.Lookup(live.Object, p); ok {
			keep = append(keep, p.Copy())
		} else {
			drop.Insert(p.Copy())
		}
	})
	return keep, drop
}

// resliceIgnored returns s without the drop fields and with the keep
// fields at their value in live; s itself when there are neither.
func resliceIgnored(obj *planner.Object, s planner.Slice, keep []fieldpath.Path, drop *fieldpath.Set, live *unstructured.Unstructured) (planner.Slice, error) {
	if len(keep) == 0 && drop.Empty() {
		return s, nil
	}
	next := planner.Slice{Manager: s.Manager, Object: s.Object.DeepCopy(), Fields: s.Fields, Hash: s.Hash}
	if !drop.Empty() {
		cut, err := obj.Reslice(s.Manager, s.Fields.Difference(drop))
		if err != nil {
			return planner.Slice{}, err
		}
		next = withExtras(obj, cut, s)
		next.Object = next.Object.DeepCopy()
	}
	for _, p := range keep {
		v, _ := paths.Lookup(live.Object, p)
		paths.Set(next.Object.Object, p, runtime.DeepCopyJSONValue(v))
	}
	return next, nil
}
