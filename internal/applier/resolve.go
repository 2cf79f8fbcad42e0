package applier

import (
	"context"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// refusal is one apply request the API server refused with field
// conflicts: the client it went to, the apply configuration sent and the
// conflicts.
type refusal struct {
	ri        dynamic.ResourceInterface
	sent      *unstructured.Unstructured
	conflicts Conflicts
}

// resolution is what the policy decided for one slice's conflicts: the
// slice to send instead (without the fields it yields or leaves to
// another app), whether it forces, and the conflicts sorted by decision.
type resolution struct {
	slice planner.Slice
	force bool
	// yielded, forced: the policy's decisions; same: conflicts over
	// fields whose value the apply would not change (taken with force);
	// left: such fields another app declares and holds (left to it);
	// other: another app's inventory label (left to it).
	yielded, forced, same, left, other Conflicts
}

// record puts the decisions on the slice's Change (a Change without
// any gets no Resolution).
func (res resolution) record(c *Change) {
	if len(res.other)+len(res.yielded)+len(res.forced)+len(res.same)+len(res.left) == 0 {
		return
	}
	rr := c.resolvedRecord()
	rr.OtherInventory = append(rr.OtherInventory, res.other...)
	rr.Yielded = append(rr.Yielded, res.yielded...)
	rr.Forced = append(rr.Forced, res.forced...)
	rr.SameValue = append(rr.SameValue, res.same...)
	rr.SameValueLeft = append(rr.SameValueLeft, res.left...)
}

// resolve applies the policy to the conflicts of one slice. Conflicts
// with the app's own managers are moves, always taken. Conflicts over
// fields whose value the apply would not change are no disagreement and
// not the policy's to decide: they are taken with force when nothing else
// fails. It fails (a Conflicted change) when the policy says fail for any
// conflict.
func (r *objectRun) resolve(ctx context.Context, obj *planner.Object, s planner.Slice, rf refusal, am appManagers) (resolution, error) {
	res := resolution{slice: s}
	var drop []fieldpath.Path
	var dropLabels []string
	var decide Conflicts
	internal := false
	for _, conflict := range rf.conflicts {
		fp := findPath(s.Fields, conflict.Path)
		key, isLabel := r.ownLabel(conflict.Path)
		switch {
		case am.ours(conflict.Manager):
			// A field moving between the app's own managers (split
			// change, rename, a handoff hold being taken back): always
			// taken, and not reported as a forced conflict.
			internal = true
		case isLabel && fp != nil:
			// Another app's inventory already counts the object as its
			// member (an object belongs to one ApplySet): both apps
			// share the object, the label stays the first app's, and
			// this app does not claim it, whatever the policy.
			res.other = append(res.other, conflict)
			drop = append(drop, fp)
			dropLabels = append(dropLabels, key)
		default:
			decide = append(decide, conflict)
		}
	}
	same, decide, live := r.sameValue(ctx, obj, s.Manager, rf, decide)
	leftPaths := res.sortSame(same, s, live, r.app)
	drop = append(drop, leftPaths...)
	failed, yieldPaths := res.decide(r, obj.Ref, s, decide)
	for i := range failed {
		failed[i].App = DeclaringApp(live, r.app, failed[i].Manager)
	}
	if len(failed) > 0 {
		return resolution{other: res.other}, fmt.Errorf("%s: apply as %q: %w", obj.Ref, s.Manager, failed)
	}
	drop = append(drop, yieldPaths...)
	if len(drop) > 0 {
		ns, err := obj.Reslice(s.Manager, s.Fields.RecursiveDifference(fieldpath.NewSet(drop...)))
		if err != nil {
			return resolution{other: res.other}, err
		}
		res.slice = withExtras(obj, ns, s, dropLabels...)
	}
	res.force = len(res.forced) > 0 || len(res.same) > 0 || internal
	return res, nil
}

// sortSame sorts the same-value conflicts: those another app declares
// with the same value and holds stay with it (taking them would make the
// two apps take them from each other on every sync), the others are
// taken. It returns the paths left.
func (res *resolution) sortSame(same Conflicts, s planner.Slice, live *unstructured.Unstructured, app string) []fieldpath.Path {
	var left []fieldpath.Path
	for _, conflict := range same {
		if fp := findPath(s.Fields, conflict.Path); fp != nil && declaredByOtherApp(live, app, conflict.Manager) {
			res.left = append(res.left, conflict)
			left = append(left, fp)
			continue
		}
		res.same = append(res.same, conflict)
	}
	return left
}

// decide asks the policy for each conflict (a migration with mode force
// forces its managers; a field whose owner keeps flipping is never
// forced) and returns the conflicts that fail and the paths yielded.
func (res *resolution) decide(r *objectRun, ref planner.ObjectRef, s planner.Slice, cs Conflicts) (failed Conflicts, yielded []fieldpath.Path) {
	for _, conflict := range cs {
		fp := findPath(s.Fields, conflict.Path)
		switch r.decision(ref, conflict, fp) {
		case ConflictYield:
			if fp == nil {
				failed = append(failed, conflict)
				continue
			}
			res.yielded = append(res.yielded, conflict)
			yielded = append(yielded, fp)
		case ConflictForce:
			res.forced = append(res.forced, conflict)
		default:
			failed = append(failed, conflict)
		}
	}
	return failed, yielded
}

// decision is the action for one conflict: the policy's, forced for a
// manager the app migrates from with mode force, and never force for a
// field that flaps.
func (r *objectRun) decision(ref planner.ObjectRef, c Conflict, fp fieldpath.Path) ConflictAction {
	action := r.ao.Policy.Decide(ref, c, fp)
	if r.ao.Migrate.forces(c.Manager) {
		action = ConflictForce
	}
	if action == ConflictForce && r.ao.Flapping != nil && r.ao.Flapping(ref, c.Path) {
		action = ConflictFail
	}
	return action
}

// sameValue sorts the conflicts of a refused request into those over
// fields whose value the request would not change and the others
// (splitSameValue), from a forced dry run of the same request, which
// shows what the API server would store, and a read of the object, which
// it returns. When either request fails, every conflict is left to the
// policy.
func (r *objectRun) sameValue(ctx context.Context, obj *planner.Object, m planner.FieldManager, rf refusal, cs Conflicts) (same, differ Conflicts, live *unstructured.Unstructured) {
	if len(cs) == 0 {
		return nil, nil, nil
	}
	forced, err := r.a.send(ctx, rf.ri, obj.Ref, request{Manager: m, Object: rf.sent, Force: true, DryRun: true})
	if err != nil {
		return nil, cs, nil
	}
	live, err = rf.ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, cs, nil
	}
	fields := fieldpath.NewSet()
	for _, e := range ownership.Decode(live).Entries {
		fields = fields.Union(e.Set)
	}
	same, differ = splitSameValue(cs, fields, live, forced)
	return same, differ, live
}

// declaredByOtherApp reports whether manager is one of another app's
// managers, as that app's managers annotation on the live object lists
// them (its handoff manager is not: it holds fields, it declares none).
func declaredByOtherApp(live *unstructured.Unstructured, app, manager string) bool {
	return DeclaringApp(live, app, manager) != ""
}

// ownLabel reports whether path is one of the labels the applier adds to
// every object (the inventory's part-of label), and which.
func (r *objectRun) ownLabel(path string) (string, bool) {
	for k := range r.ao.Labels {
		if path == ".metadata.labels."+k {
			return k, true
		}
	}
	return "", false
}
