package applier

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// ApplyOptions are an app's settings for one Apply call. The zero value
// fails on every conflict, holds dropped fields, never recreates and does
// not wait.
type ApplyOptions struct {
	// Policy resolves field conflicts with other managers; nil fails on
	// every conflict. Conflicts between the app's own managers (fields
	// moving after a split change or rename) are always forced.
	Policy *Policy
	// ReleaseHandoff lets fields a manager dropped go at once (app
	// handoff: release) instead of holding them until someone owns them.
	ReleaseHandoff bool
	// Recreate allows delete-and-create when the API server says a field
	// is immutable.
	Recreate bool
	// RecordManagers writes the app's managers annotation on every object
	// so a later run can migrate renamed managers. The ad-hoc
	// `syncd apply --path` leaves it off.
	RecordManagers bool
	// SkipValidation applies each object on its own (apps[].validate:
	// false): without it, the objects of a stage that will be written are
	// dry-run before its first write, and a refusal writes nothing of the
	// stage or of later ones.
	SkipValidation bool
	// Wait waits, after each stage's writes, until the stage's objects are
	// kstatus Current (or Failed), up to Timeout (default 5 minutes) from
	// the end of the stage's writes, before going on to the next stage.
	Wait    bool
	Timeout time.Duration
	// Labels are added to every object's default slice (the inventory's
	// applyset.kubernetes.io/part-of label).
	Labels map[string]string
	// Live, when set, answers the per-object read from a watch cache
	// instead of a GET. It may return metadata-only objects
	// (managedFields, annotations, resourceVersion are what is needed);
	// nil with a NotFound error means absent.
	Live LiveReader
	// Skip, when set, is asked for every object that exists; true means
	// nothing about it changed since syncd last applied it (same slice
	// hashes, same live resourceVersion) and no request is sent for it.
	Skip func(obj *planner.Object, live *unstructured.Unstructured) bool
	// Migrate names the managers whose fields the app takes over
	// (apps[].migrate); nil takes over only client-side kubectl apply's
	// fields, and only those the apply does not change.
	Migrate *Migration
	// Flapping, when set, names fields syncd must stop forcing because
	// their owner keeps flipping (ping-pong with another forcing writer);
	// such conflicts fail instead.
	Flapping func(ref planner.ObjectRef, path string) bool
}

// LiveReader reads the current state of an object, typically from a watch
// cache so that unchanged objects cost no request.
type LiveReader interface {
	Live(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error)
}

// UnchangedReader is an optional interface of a LiveReader that can tell
// from its cache alone that an object is exactly as syncd left it. The
// applier asks it before reading the object, so a no-op sync of thousands
// of objects builds no live object at all; it returns the live
// resourceVersion and true to skip the object. Objects it is unsure of
// (false) go through Live and Skip as usual. It is asked when the run
// waits for health too: an unchanged object is not written, but it is
// still waited for (an object already Current ends its wait at once).
type UnchangedReader interface {
	Unchanged(ctx context.Context, obj *planner.Object) (resourceVersion string, ok bool)
}

// clientSideManagers are the managers of client-side kubectl apply and of
// objects that predate managedFields; the fields the app shares with them
// are taken over (Migration) so that fields later removed from Git do
// not linger.
var clientSideManagers = sets.New(config.ClientSideManagers...)

// lastAppliedAnnotation is client-side apply's record of the last applied
// configuration.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// objectRun applies the objects of one plan.
type objectRun struct {
	a          *Applier
	ao         ApplyOptions
	app        string
	hpaTargets map[planner.ObjectRef]bool
	// mappings caches the REST mapping of each kind for the run (the
	// discovery mapper allocates a new mapping per call, which for
	// thousands of objects was a large share of the sync's memory). It is
	// cleared when the mapper is reset after CRDs are established.
	mappings sync.Map // schema.GroupVersionKind → *meta.RESTMapping
}

// resource returns the client for ref's resource, mapping each kind once
// per run.
func (r *objectRun) resource(ref planner.ObjectRef) (dynamic.ResourceInterface, error) {
	gvk := ref.GVK()
	if m, ok := r.mappings.Load(gvk); ok {
		return r.a.client(m.(*meta.RESTMapping), ref), nil
	}
	m, err := r.a.mapping(ref)
	if err != nil {
		return nil, err
	}
	r.mappings.Store(gvk, m)
	return r.a.client(m, ref), nil
}

// hpaTargets returns the workloads HorizontalPodAutoscalers in the plan
// scale (refs without version).
func hpaTargets(plan *planner.Plan) map[planner.ObjectRef]bool {
	out := map[planner.ObjectRef]bool{}
	for _, o := range plan.Objects {
		if o.Ref.Group != "autoscaling" || o.Ref.Kind != "HorizontalPodAutoscaler" {
			continue
		}
		target, _, _ := unstructured.NestedStringMap(o.Desired.Object, "spec", "scaleTargetRef")
		gv, err := schema.ParseGroupVersion(target["apiVersion"])
		if err != nil || target["kind"] == "" || target["name"] == "" {
			continue
		}
		out[planner.ObjectRef{Group: gv.Group, Kind: target["kind"], Namespace: o.Ref.Namespace, Name: target["name"]}] = true
	}
	return out
}

var replicasPath = fieldpath.MakePathOrDie("spec", "replicas")

// prepare returns the slices to send: the plan's, with the managers
// annotation on the default slice and, for a live workload an HPA scales,
// without .spec.replicas (sent only on creation).
func (r *objectRun) prepare(obj *planner.Object, exists bool) ([]planner.Slice, error) {
	out := slices.Clone(obj.Slices)
	ref := obj.Ref
	ref.Version = ""
	if exists && r.hpaTargets[ref] {
		for i, s := range out {
			if !s.Fields.Has(replicasPath) {
				continue
			}
			ns, err := obj.Reslice(s.Manager, s.Fields.RecursiveDifference(fieldpath.NewSet(replicasPath)))
			if err != nil {
				return nil, err
			}
			ns.Object = withIdentity(obj, ns.Object)
			out[i] = ns
		}
	}
	if len(out) > 0 && (r.ao.RecordManagers || len(r.ao.Labels) > 0) {
		s := out[0]
		u := s.Object.DeepCopy()
		fields := s.Fields
		if r.ao.RecordManagers {
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			key := managersAnnotation(r.app)
			ann[key] = managerList(obj)
			u.SetAnnotations(ann)
			fields = fields.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations", key)))
		}
		if len(r.ao.Labels) > 0 {
			labels := u.GetLabels()
			if labels == nil {
				labels = map[string]string{}
			}
			for k, v := range r.ao.Labels {
				labels[k] = v
				fields = fields.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "labels", k)))
			}
			u.SetLabels(labels)
		}
		out[0] = planner.Slice{Manager: s.Manager, Object: u, Fields: fields, Hash: s.Hash}
	}
	return out, nil
}

// target is one object of a stage between its read and its write: the
// client of its resource, the live object (nil: it does not exist) and
// its changes so far. done is set when nothing is left to write: the
// object is unchanged, or its read failed.
type target struct {
	obj     *planner.Object
	ri      dynamic.ResourceInterface
	live    *unstructured.Unstructured
	changes []Change
	done    bool
	spent   time.Duration
}

// apply reads and writes one object and returns one Change per slice
// (Preview's path: no validation pass, no wait).
func (r *objectRun) apply(ctx context.Context, obj *planner.Object) []Change {
	t := r.read(ctx, obj)
	r.write(ctx, t)
	return t.changes
}

// read maps the object's kind and reads it, deciding whether anything is
// left to write: an object unchanged since syncd last applied it (the
// UnchangedReader's answer, or Skip on the live object) is done.
func (r *objectRun) read(ctx context.Context, obj *planner.Object) *target {
	t := &target{obj: obj, changes: make([]Change, len(obj.Slices))}
	for i, s := range obj.Slices {
		t.changes[i] = Change{Object: obj.Ref, Manager: s.Manager, Action: Skipped}
	}
	if len(obj.Slices) == 0 {
		t.done = true
		return t
	}
	defer t.timed(time.Now())
	ri, err := r.resource(obj.Ref)
	if err != nil {
		t.fail(err)
		return t
	}
	t.ri = ri
	if ur, ok := r.ao.Live.(UnchangedReader); ok && r.ao.Skip != nil {
		if rv, ok := ur.Unchanged(ctx, obj); ok {
			t.unchanged(rv)
			return t
		}
	}
	var live *unstructured.Unstructured
	if r.ao.Live != nil {
		live, err = r.ao.Live.Live(ctx, obj.Ref)
	} else {
		live, err = ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.fail(describeError(obj.Ref, "get", err))
	case r.ao.Skip != nil && r.ao.Skip(obj, live):
		t.unchanged(live.GetResourceVersion())
	default:
		t.live = live
	}
	return t
}

// write sends the slices of an object read has left something to write
// for: a create when it does not exist, else an update.
func (r *objectRun) write(ctx context.Context, t *target) {
	if t.done {
		return
	}
	defer t.timed(time.Now())
	var final *unstructured.Unstructured
	if t.live == nil {
		final = r.create(ctx, t.ri, t.obj, t.changes, Created)
	} else {
		final = r.update(ctx, t.ri, t.obj, t.live, t.changes)
	}
	t.done = true
	if final != nil && !r.a.opts.DryRun {
		for i := range t.changes {
			t.changes[i].ResourceVersion = final.GetResourceVersion()
		}
	}
}

// timed adds the time since start to the object's changes' Duration.
func (t *target) timed(start time.Time) {
	t.spent += time.Since(start)
	for i := range t.changes {
		t.changes[i].Duration = t.spent
	}
}

// fail marks the object failed with err: nothing is left to write.
func (t *target) fail(err error) {
	t.changes[0].Action, t.changes[0].Err = Failed, err
	t.done = true
}

// unchanged marks every slice unchanged at resourceVersion rv.
func (t *target) unchanged(rv string) {
	for i := range t.changes {
		t.changes[i].Action, t.changes[i].ResourceVersion = Unchanged, rv
	}
	t.done = true
}

// changesOf returns the targets' changes, in order.
func changesOf(targets []*target) [][]Change {
	out := make([][]Change, len(targets))
	for i, t := range targets {
		out[i] = t.changes
	}
	return out
}

// create makes an object that does not exist yet. With one slice it is one
// apply. With several, validation needs the whole object, so: the whole
// object under the default manager, then each split slice (the fields
// become shared), then the default slice again (the default manager lets
// the split fields go). No field is ever missing from the live object.
func (r *objectRun) create(ctx context.Context, ri dynamic.ResourceInterface, obj *planner.Object, changes []Change, action Action) *unstructured.Unstructured {
	sl, err := r.prepare(obj, false)
	if err != nil {
		changes[0].Action, changes[0].Err = Failed, err
		return nil
	}
	if len(sl) == 1 {
		res, err := r.a.send(ctx, ri, obj.Ref, sl[0].Manager, sl[0].Object, false, r.a.opts.DryRun)
		if err != nil {
			setFailed(&changes[0], err)
			return nil
		}
		changes[0].Action = action
		return res
	}
	whole := obj.Desired.DeepCopy()
	if ann := sl[0].Object.GetAnnotations(); ann != nil {
		merged := whole.GetAnnotations()
		if merged == nil {
			merged = map[string]string{}
		}
		key := managersAnnotation(r.app)
		if v, ok := ann[key]; ok {
			merged[key] = v
		}
		whole.SetAnnotations(merged)
	}
	if len(r.ao.Labels) > 0 {
		labels := whole.GetLabels()
		if labels == nil {
			labels = map[string]string{}
		}
		for k, v := range r.ao.Labels {
			labels[k] = v
		}
		whole.SetLabels(labels)
	}
	if _, err := r.a.send(ctx, ri, obj.Ref, sl[0].Manager, whole, false, r.a.opts.DryRun); err != nil {
		setFailed(&changes[0], err)
		return nil
	}
	if r.a.opts.DryRun {
		// Nothing exists to share fields with: the dry run of the whole
		// object previews every slice.
		for i := range changes {
			changes[i].Action = action
		}
		return nil
	}
	var last *unstructured.Unstructured
	for _, i := range append(seq(1, len(sl)), 0) {
		res, err := r.a.send(ctx, ri, obj.Ref, sl[i].Manager, sl[i].Object, true, false)
		if err != nil {
			setFailed(&changes[i], err)
			return nil
		}
		changes[i].Action = action
		last = res
	}
	return last
}

func seq(from, to int) []int {
	out := make([]int, 0, to-from)
	for i := from; i < to; i++ {
		out = append(out, i)
	}
	return out
}

func setFailed(c *Change, err error) {
	c.Action, c.Err = Failed, err
	if cs := FieldConflicts(err); cs != nil {
		c.Action, c.Conflicts = Conflicted, cs
	}
}

// update brings an existing object to the plan, moving fields between the
// app's managers without letting any disappear, resolving conflicts with
// other managers by policy, and holding fields that would be reset.
func (r *objectRun) update(ctx context.Context, ri dynamic.ResourceInterface, obj *planner.Object, live *unstructured.Unstructured, changes []Change) *unstructured.Unstructured {
	dry := r.a.opts.DryRun
	sl, err := r.prepare(obj, true)
	if err != nil {
		changes[0].Action, changes[0].Err = Failed, err
		return nil
	}

	if metadataOnly(live) {
		// A watch cache or the inventory's read answers with metadata
		// only; telling what an apply changed (or, in a dry run, would
		// change) needs the values.
		if live, err = ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{}); err != nil {
			changes[0].Action, changes[0].Err = Failed, describeError(obj.Ref, "get", err)
			return nil
		}
	}

	own := decodeOwnership(live)
	current := map[string]bool{}
	for _, s := range sl {
		current[string(s.Manager)] = true
	}
	var old []planner.FieldManager
	for _, m := range managersOf(live, r.app) {
		if !current[string(m)] && own.has(string(m)) {
			old = append(old, m)
		}
	}
	ours := func(m string) bool {
		base, _ := HandoffOwner(m)
		if current[string(base)] {
			return true
		}
		return slices.Contains(old, base)
	}
	desiredAll := fieldpath.NewSet()
	for _, s := range sl {
		desiredAll = desiredAll.Union(s.Fields)
	}
	// A field moves to a slice's manager when another of the app's
	// managers owns it and this one does not yet. Fields both already own
	// (the key fields of a list item split between them, such as a
	// container's name) stay shared and are no move.
	moving := len(old) > 0
	for _, s := range sl {
		others := own.ownedExcept(func(m string) bool { return m == string(s.Manager) || !ours(m) })
		incoming := s.Fields.Leaves().Difference(own.applied(s.Manager).Leaves())
		if !incoming.Intersection(others).Empty() {
			moving = true
		}
	}

	// The first phase of a move: each manager applies its new fields
	// plus the ones it is giving to another of the app's managers, so
	// that no field is ever left without an owner (the API server would
	// delete it, reset it to its default, or refuse the request when it is
	// required, like a container's image).
	phase1 := func(i int) (next planner.Slice, needed bool, err error) {
		s := sl[i]
		mine := own.applied(s.Manager).Leaves()
		keep := mine.Intersection(desiredAll).Difference(s.Fields)
		if keep.Empty() {
			return s, !s.Fields.Leaves().Difference(mine).Empty(), nil
		}
		next, err = obj.Reslice(s.Manager, s.Fields.Union(keep))
		if err != nil {
			return planner.Slice{}, false, err
		}
		return withExtras(obj, next, s), true, nil
	}

	// Predict conflicts before writing anything. One slice and nothing
	// moving: the real non-forced apply is the prediction, since a request
	// that conflicts writes nothing. Otherwise dry-run every slice first,
	// so that a failing policy leaves the object untouched. During a move
	// the first-phase slices are dry-run: an exact slice that gives a field
	// away would be refused while nobody else owns the field yet.
	force := make([]bool, len(sl))
	predict := len(sl) > 1 || moving || dry
	if predict {
		for i := range sl {
			next := func() (planner.Slice, error) {
				if !moving {
					return sl[i], nil
				}
				p, _, err := phase1(i)
				return p, err
			}
			p, err := next()
			if err != nil {
				changes[i].Action, changes[i].Err = Failed, err
				return nil
			}
			res, err := r.a.send(ctx, ri, obj.Ref, p.Manager, p.Object, false, true)
			if err != nil {
				cs := FieldConflicts(err)
				if cs == nil {
					changes[i].Action, changes[i].Err = Failed, err
					return nil
				}
				if !r.resolve(ctx, obj, &sl[i], &changes[i], &force[i], refusal{ri: ri, sent: p.Object, conflicts: cs}, ours) {
					return nil
				}
				if dry && moving {
					if p, err = next(); err == nil {
						res, err = r.a.send(ctx, ri, obj.Ref, p.Manager, p.Object, force[i], true)
					}
					if err != nil {
						setFailed(&changes[i], err)
						return nil
					}
				}
			}
			if dry && moving {
				// A dry run cannot chain the two phases: the first
				// phase's preview is the answer.
				changes[i].Action, changes[i].Changed = r.outcome(write{before: live, after: res}, &changes[i])
				if _, err := r.takeOver(ctx, ri, obj, res, []planner.FieldManager{p.Manager}, changes[i:i+1]); err != nil {
					changes[i].Action, changes[i].Err = Failed, err
					return nil
				}
			}
		}
		if dry && moving {
			return live
		}
	}

	// Phase 1 of a move.
	moved := make([]bool, len(sl))
	if moving && !dry {
		for i := range sl {
			p, needed, err := phase1(i)
			if err != nil {
				changes[i].Action, changes[i].Err = Failed, err
				return nil
			}
			if !needed {
				continue
			}
			res, err := r.a.send(ctx, ri, obj.Ref, p.Manager, p.Object, true, false)
			if err != nil {
				setFailed(&changes[i], err)
				return nil
			}
			moved[i] = res.GetResourceVersion() != live.GetResourceVersion() && changedFor(p.Manager, live, res)
			live = res
		}
	}

	// Phase 2: each manager's exact slice, holding fields it drops that
	// nobody else owns and that the server would reset rather than delete.
	for i, s := range sl {
		othersAfter := own.ownedExcept(func(m string) bool {
			return m == string(s.Manager) || isHandoff(m) || slices.Contains(old, planner.FieldManager(m))
		})
		for j, o := range sl {
			if j != i {
				othersAfter = othersAfter.Union(o.Fields)
			}
		}
		dropped := own.applied(s.Manager).Leaves().Difference(s.Fields).Difference(othersAfter)
		if !dropped.Empty() && !r.ao.ReleaseHandoff {
			held, err := r.hold(ctx, ri, obj, live, s.Manager, s.Object, dropped, force[i])
			if cs := FieldConflicts(err); cs != nil && !predict {
				// The hold's dry run is the first request of this
				// slice, so it is the one that meets conflicts with
				// other managers: resolve them by policy as the real
				// apply would, then hold what the resolved slice drops.
				if !r.resolve(ctx, obj, &sl[i], &changes[i], &force[i], refusal{ri: ri, sent: s.Object, conflicts: cs}, ours) {
					return nil
				}
				s = sl[i]
				dropped = own.applied(s.Manager).Leaves().Difference(s.Fields).Difference(othersAfter)
				held, err = nil, nil
				if !dropped.Empty() {
					held, err = r.hold(ctx, ri, obj, live, s.Manager, s.Object, dropped, force[i])
				}
			}
			if err != nil {
				setFailed(&changes[i], err)
				return nil
			}
			changes[i].Held = held
		}
		w, err := r.applyOver(ctx, ri, obj.Ref, s, force[i], live)
		if err != nil && !predict {
			if cs := FieldConflicts(err); cs != nil {
				if !r.resolve(ctx, obj, &sl[i], &changes[i], &force[i], refusal{ri: ri, sent: s.Object, conflicts: cs}, ours) {
					return nil
				}
				s = sl[i]
				w, err = r.applyOver(ctx, ri, obj.Ref, s, force[i], live)
			}
		}
		if err != nil && isImmutable(err) {
			return r.recreate(ctx, ri, obj, changes, err)
		}
		if err != nil {
			setFailed(&changes[i], err)
			return nil
		}
		changes[i].Action, changes[i].Changed = r.outcome(w, &changes[i])
		if moved[i] && changes[i].Action == Unchanged {
			changes[i].Action = Configured
		}
		if dry {
			// Each slice's dry run is applied over the object as it is:
			// its own answer says what its manager would take over.
			if _, err := r.takeOver(ctx, ri, obj, w.after, []planner.FieldManager{s.Manager}, changes[i:i+1]); err != nil {
				changes[i].Action, changes[i].Err = Failed, err
				return nil
			}
		}
		live = w.after
	}
	if dry {
		return live
	}

	// Old managers (renamed or removed from the split) let go of their
	// fields; the current managers share or own them by now.
	last := live
	for _, m := range old {
		dropped := own.applied(m).Leaves().Difference(desiredAll).Difference(own.ownedExcept(func(x string) bool {
			return ours(x)
		}))
		if !dropped.Empty() && !r.ao.ReleaseHandoff {
			if _, err := r.hold(ctx, ri, obj, last, m, identity(obj), dropped, true); err != nil {
				changes[0].Action, changes[0].Err = Failed, err
				return nil
			}
		}
		res, err := r.a.send(ctx, ri, obj.Ref, m, identity(obj), true, false)
		if err != nil {
			changes[0].Action, changes[0].Err = Failed, fmt.Errorf("%s: release old manager %s: %w", obj.Ref, m, err)
			return nil
		}
		last = res
		changes[0].Migrated = append(changes[0].Migrated, string(m))
		if changes[0].Action == Unchanged {
			changes[0].Action = Configured
		}
	}

	// Fields the app's managers now share with the tools that applied
	// the object before syncd (client-side kubectl apply, the managers
	// the app migrates from) are the app's alone from now on.
	managers := make([]planner.FieldManager, len(sl))
	for i, s := range sl {
		managers[i] = s.Manager
	}
	if last, err = r.takeOver(ctx, ri, obj, last, managers, changes); err != nil {
		changes[0].Action, changes[0].Err = Failed, err
		return nil
	}

	// Handoff managers let go once someone else owns their fields, or at
	// once when the app says handoff: release.
	final := decodeOwnership(last)
	for _, e := range final.entries {
		if !isHandoff(e.manager) || !ours(e.manager) {
			continue
		}
		others := final.ownedExcept(isHandoff)
		if !r.ao.ReleaseHandoff && !e.set.Leaves().Difference(others).Empty() {
			continue
		}
		res, err := r.a.send(ctx, ri, obj.Ref, planner.FieldManager(e.manager), identity(obj), true, false)
		if err != nil {
			changes[0].Action, changes[0].Err = Failed, fmt.Errorf("%s: release handoff manager %s: %w", obj.Ref, e.manager, err)
			return nil
		}
		last = res
	}
	return last
}

// refusal is one apply request the API server refused with field
// conflicts: the client it went to, the apply configuration sent and the
// conflicts.
type refusal struct {
	ri        dynamic.ResourceInterface
	sent      *unstructured.Unstructured
	conflicts Conflicts
}

// resolve applies the policy to the conflicts of one slice. Conflicts over
// fields whose value the apply would not change are no disagreement and
// not the policy's to decide: they are taken with force when nothing else
// fails. It returns false when the object must be skipped (a fail
// outcome).
func (r *objectRun) resolve(ctx context.Context, obj *planner.Object, s *planner.Slice, c *Change, force *bool, rf refusal, ours func(string) bool) bool {
	var failed, yielded, forced, decide Conflicts
	var drop []fieldpath.Path
	var dropLabels []string
	internal := false
	for _, conflict := range rf.conflicts {
		if ours(conflict.Manager) {
			// A field moving between the app's own managers (split
			// change, rename, a handoff hold being taken back): always
			// taken, and not reported as a forced conflict.
			internal = true
			continue
		}
		fp := findPath(s.Fields, conflict.Path)
		if key, ok := r.ownLabel(conflict.Path); ok && fp != nil {
			// Another app's inventory already counts the object as its
			// member (an object belongs to one ApplySet): both apps
			// share the object, the label stays the first app's, and
			// this app does not claim it, whatever the policy.
			c.OtherInventory = append(c.OtherInventory, conflict)
			drop = append(drop, fp)
			dropLabels = append(dropLabels, key)
			continue
		}
		decide = append(decide, conflict)
	}
	same, decide, live := r.sameValue(ctx, obj, s.Manager, rf, decide)
	var taken, left Conflicts
	for _, conflict := range same {
		// Another app declares the same value and holds the field:
		// taking it would make the two apps take it from each other on
		// every sync. It stays with that app.
		if fp := findPath(s.Fields, conflict.Path); fp != nil && declaredByOtherApp(live, r.app, conflict.Manager) {
			left = append(left, conflict)
			drop = append(drop, fp)
			continue
		}
		taken = append(taken, conflict)
	}
	for _, conflict := range decide {
		fp := findPath(s.Fields, conflict.Path)
		action := r.ao.Policy.Decide(obj.Ref, conflict, fp)
		if r.ao.Migrate.forces(conflict.Manager) {
			// The app migrates from this manager with mode force.
			action = config.ActionForce
		}
		if action == config.ActionForce && r.ao.Flapping != nil && r.ao.Flapping(obj.Ref, conflict.Path) {
			action = config.ActionFail
		}
		switch action {
		case config.ActionYield:
			if fp == nil {
				failed = append(failed, conflict)
				continue
			}
			yielded = append(yielded, conflict)
			drop = append(drop, fp)
		case config.ActionForce:
			forced = append(forced, conflict)
		default:
			failed = append(failed, conflict)
		}
	}
	if len(failed) > 0 {
		c.Action, c.Conflicts = Conflicted, failed
		c.Err = fmt.Errorf("%s: apply as %q: %w", obj.Ref, s.Manager, failed)
		return false
	}
	if len(drop) > 0 {
		ns, err := obj.Reslice(s.Manager, s.Fields.RecursiveDifference(fieldpath.NewSet(drop...)))
		if err != nil {
			c.Action, c.Err = Failed, err
			return false
		}
		*s = withExtras(obj, ns, *s, dropLabels...)
	}
	c.Yielded = append(c.Yielded, yielded...)
	c.Forced = append(c.Forced, forced...)
	c.SameValue = append(c.SameValue, taken...)
	c.SameValueLeft = append(c.SameValueLeft, left...)
	if len(forced) > 0 || len(taken) > 0 || internal {
		*force = true
	}
	return true
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
	forced, err := r.a.send(ctx, rf.ri, obj.Ref, m, rf.sent, true, true)
	if err != nil {
		return nil, cs, nil
	}
	live, err = rf.ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, cs, nil
	}
	fields := fieldpath.NewSet()
	for _, e := range decodeOwnership(live).entries {
		fields = fields.Union(e.set)
	}
	same, differ = splitSameValue(cs, fields, live.Object, forced.Object)
	return same, differ, live
}

// declaredByOtherApp reports whether manager is one of another app's
// managers, as that app's managers annotation on the live object lists
// them (its handoff manager is not: it holds fields, it declares none).
func declaredByOtherApp(live *unstructured.Unstructured, app, manager string) bool {
	if live == nil {
		return false
	}
	for k := range live.GetAnnotations() {
		if !strings.HasPrefix(k, ManagersAnnotationPrefix) || k == managersAnnotation(app) {
			continue
		}
		other := strings.TrimPrefix(k, ManagersAnnotationPrefix)
		if slices.Contains(managersOf(live, other), planner.FieldManager(manager)) {
			return true
		}
	}
	return false
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

// withExtras returns next with the labels and annotations that prepare
// added to s and that are not in the object's desired state (the managers
// annotation, the inventory's labels): a slice cut again from the desired
// state would lose them, and applying it would remove them from the
// object. Labels named in without are not carried over.
func withExtras(obj *planner.Object, next, s planner.Slice, without ...string) planner.Slice {
	fields := next.Fields
	u := withIdentity(obj, next.Object.DeepCopy())
	for _, md := range []struct {
		name    string
		desired map[string]string
		get     func(*unstructured.Unstructured) map[string]string
		set     func(*unstructured.Unstructured, map[string]string)
	}{
		{"labels", obj.Desired.GetLabels(), (*unstructured.Unstructured).GetLabels, (*unstructured.Unstructured).SetLabels},
		{"annotations", obj.Desired.GetAnnotations(), (*unstructured.Unstructured).GetAnnotations, (*unstructured.Unstructured).SetAnnotations},
	} {
		merged := md.get(u)
		for k, v := range md.get(s.Object) {
			if _, ok := md.desired[k]; ok {
				continue
			}
			if md.name == "labels" && slices.Contains(without, k) {
				continue
			}
			if merged == nil {
				merged = map[string]string{}
			}
			merged[k] = v
			fields = fields.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", md.name, k)))
		}
		if merged != nil {
			md.set(u, merged)
		}
	}
	return planner.Slice{Manager: next.Manager, Object: u, Fields: fields, Hash: next.Hash}
}

// withIdentity makes sure u has a metadata map naming the object: a
// slice cut with no metadata field left comes back with "metadata": null,
// on which neither the name nor an annotation can be set (the request
// would go without them, and the managers annotation would be lost).
func withIdentity(obj *planner.Object, u *unstructured.Unstructured) *unstructured.Unstructured {
	if _, ok := u.Object["metadata"].(map[string]any); ok {
		return u
	}
	u.Object["metadata"] = map[string]any{}
	u.SetName(obj.Ref.Name)
	if obj.Ref.Namespace != "" {
		u.SetNamespace(obj.Ref.Namespace)
	}
	return u
}

// hold keeps fields that manager m is about to drop at their live value,
// under m's handoff manager, when dropping them would reset them to a
// server default instead of deleting them (the HPA replicas trap). The
// dry run of m's next apply tells which. It returns the held paths.
func (r *objectRun) hold(ctx context.Context, ri dynamic.ResourceInterface, obj *planner.Object, live *unstructured.Unstructured, m planner.FieldManager, next *unstructured.Unstructured, dropped *fieldpath.Set, force bool) ([]string, error) {
	preview, err := r.a.send(ctx, ri, obj.Ref, m, next, force, true)
	if err != nil {
		return nil, err
	}
	// The live object handed in may be metadata only (from a watch
	// cache); the values are needed here, and this path is rare.
	if live, err = ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{}); err != nil {
		return nil, describeError(obj.Ref, "get", err)
	}
	held := fieldpath.NewSet()
	var names []string
	dropped.Iterate(func(p fieldpath.Path) {
		was, inLive := paths.Lookup(live.Object, p)
		now, inPreview := paths.Lookup(preview.Object, p)
		_, wasMap := was.(map[string]any)
		_, nowMap := now.(map[string]any)
		if wasMap && nowMap {
			// A map the manager owned as a node (.metadata.annotations
			// after client-side apply's annotation left it): its keys
			// are separate fields with their own owners, so other keys
			// changing is not a reset.
			return
		}
		if inLive && inPreview && !equality.Semantic.DeepEqual(was, now) {
			held.Insert(p.Copy())
			names = append(names, p.String())
		}
	})
	if held.Empty() || r.a.opts.DryRun {
		return names, nil
	}
	hs, err := obj.ResliceFrom(live, HandoffManager(m), held)
	if err != nil {
		return nil, err
	}
	if _, err := r.a.send(ctx, ri, obj.Ref, HandoffManager(m), hs.Object, true, false); err != nil {
		return nil, fmt.Errorf("%s: hold %s for handoff: %w", obj.Ref, strings.Join(names, ", "), err)
	}
	return names, nil
}

// identity returns an apply configuration with only the object's identity:
// applying it as a manager releases everything that manager owns.
func identity(obj *planner.Object) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion(obj.Desired.GetAPIVersion())
	u.SetKind(obj.Desired.GetKind())
	u.SetName(obj.Ref.Name)
	if obj.Ref.Namespace != "" {
		u.SetNamespace(obj.Ref.Namespace)
	}
	return u
}

// write is one apply request's answer: the object it was applied over
// and the API server's response. exact is set when the request carried
// before's resourceVersion as a precondition, so that a new
// resourceVersion in the response is this request's own write.
type write struct {
	before, after *unstructured.Unstructured
	exact         bool
}

// wrote reports whether the API server wrote the object for this request.
// A precondition makes it exact: the response's resourceVersion differs
// from the one the request was applied over exactly when the server
// wrote (spec, generation, metadata or managedFields). Dry runs, and the
// rare request sent without a precondition after other writers kept
// moving the object, fall back to comparing the manager's own fields: a
// controller writing status in between is no change by the apply.
func (w write) wrote(m planner.FieldManager, dryRun bool) bool {
	if !dryRun && w.after.GetResourceVersion() == w.before.GetResourceVersion() {
		return false
	}
	if w.exact && !dryRun {
		return true
	}
	return changedFor(m, w.before, w.after)
}

// outcome tells what one slice's apply did to the object and, when the
// server wrote, what changed. A slice that forced, yielded or left fields
// to the handoff manager says so whether or not the server wrote (the
// policy's decision is the news; Change.Wrote tells the write); any other
// slice is configured only when the server wrote, else unchanged.
func (r *objectRun) outcome(w write, c *Change) (Action, []string) {
	var changed []string
	if w.wrote(c.Manager, r.a.opts.DryRun) {
		changed = writtenFields(c.Manager, w.before, w.after)
	}
	switch {
	case len(c.Held) > 0:
		return HandoffPending, changed
	case len(c.Forced) > 0:
		return Forced, changed
	case len(c.Yielded) > 0:
		return Yielded, changed
	case changed == nil:
		return Unchanged, nil
	}
	return Configured, changed
}

// applyOver applies s over before: with before's resourceVersion as a
// precondition, so that the answer tells whether this request wrote. When
// another writer moved the object first (a controller writing status: an
// optimistic-lock conflict), it reads the object again and applies over
// that; if the object keeps moving, the last try goes without the
// precondition and the write is not exact. Dry runs carry no
// precondition.
func (r *objectRun) applyOver(ctx context.Context, ri dynamic.ResourceInterface, ref planner.ObjectRef, s planner.Slice, force bool, before *unstructured.Unstructured) (write, error) {
	if r.a.opts.DryRun {
		res, err := r.a.send(ctx, ri, ref, s.Manager, s.Object, force, true)
		return write{before: before, after: res}, err
	}
	base := before
	var res *unstructured.Unstructured
	err := retry.OnError(retry.DefaultBackoff, isRetryableConflict, func() error {
		guarded := s.Object.DeepCopy()
		guarded.SetResourceVersion(base.GetResourceVersion())
		var err error
		if res, err = r.a.send(ctx, ri, ref, s.Manager, guarded, force, false); !isRetryableConflict(err) {
			return err
		}
		fresh, gerr := ri.Get(ctx, ref.Name, metav1.GetOptions{})
		if gerr != nil {
			return describeError(ref, "get", gerr)
		}
		base = fresh
		return err
	})
	if err == nil {
		return write{before: base, after: res, exact: true}, nil
	}
	if !isRetryableConflict(err) {
		return write{}, err
	}
	res, err = r.a.send(ctx, ri, ref, s.Manager, s.Object, force, false)
	return write{before: base, after: res}, err
}

// metadataOnly reports whether u carries nothing but its identity and
// metadata (a PartialObjectMetadata from a watch cache or a metadata
// read).
func metadataOnly(u *unstructured.Unstructured) bool {
	for k := range u.Object {
		if k != "apiVersion" && k != "kind" && k != "metadata" {
			return false
		}
	}
	return true
}

// maxChanged bounds the fields a Change lists; the rest are counted.
const maxChanged = 20

// writtenFields names what a write by m changed, in the API server's path
// notation and never with values: each field m owned before or after
// whose value changed (set, changed or removed), then the fields m began
// or stopped owning with the value unchanged ("(now owned)",
// "(released)"). When the write changed none of those (another
// manager's metadata, the generation), it says "metadata".
func writtenFields(m planner.FieldManager, before, after *unstructured.Unstructured) []string {
	was, is := decodeOwnership(before).applied(m).Leaves(), decodeOwnership(after).applied(m).Leaves()
	var values, owners []string
	was.Union(is).Iterate(func(p fieldpath.Path) {
		x, inBefore := paths.Lookup(before.Object, p)
		y, inAfter := paths.Lookup(after.Object, p)
		switch {
		case inBefore != inAfter || !equality.Semantic.DeepEqual(x, y):
			values = append(values, p.String())
		case !was.Has(p):
			owners = append(owners, p.String()+" (now owned)")
		case !is.Has(p):
			owners = append(owners, p.String()+" (released)")
		}
	})
	out := append(values, owners...)
	if len(out) == 0 {
		return []string{"metadata"}
	}
	if len(out) > maxChanged {
		out = append(out[:maxChanged], fmt.Sprintf("and %d more", len(out)-maxChanged))
	}
	return out
}

// changedFor reports whether an apply by m changed the object: m's set of
// fields or the value of a field m owns. A new resourceVersion alone does
// not tell, since a controller (the Deployment controller writing status
// and its revision annotation) may have written the object between the
// read and the apply; an apply can only change what its manager owns
// before or after it.
func changedFor(m planner.FieldManager, before, after *unstructured.Unstructured) bool {
	was, is := decodeOwnership(before).applied(m), decodeOwnership(after).applied(m)
	if !was.Equals(is) {
		return true
	}
	changed := false
	is.Leaves().Iterate(func(p fieldpath.Path) {
		if changed {
			return
		}
		x, inBefore := paths.Lookup(before.Object, p)
		y, inAfter := paths.Lookup(after.Object, p)
		changed = inBefore != inAfter || !equality.Semantic.DeepEqual(x, y)
	})
	return changed
}

// isImmutable reports whether the API server refused a change because a
// field is immutable, from the error's causes alone: the server's message
// is built from the same causes, so it says nothing they do not
// (TestImmutableCauses: ConfigMap and Secret data, Deployment selector,
// Job template). Refusals worded otherwise, like a Service's clusterIP
// ("may not change once set"), are not immutability and never recreate.
func isImmutable(err error) bool {
	return apierrors.IsInvalid(err) && len(immutableFields(err)) > 0
}

// immutableFields lists the fields an immutability error names.
func immutableFields(err error) []string {
	var status apierrors.APIStatus
	var out []string
	if errors.As(err, &status) && status.Status().Details != nil {
		for _, c := range status.Status().Details.Causes {
			if strings.Contains(c.Message, "immutable") && c.Field != "" {
				out = append(out, c.Field)
			}
		}
	}
	return out
}

// recreate deletes the object and creates it again when the app allows it;
// otherwise it reports the immutable fields.
func (r *objectRun) recreate(ctx context.Context, ri dynamic.ResourceInterface, obj *planner.Object, changes []Change, cause error) *unstructured.Unstructured {
	fields := strings.Join(immutableFields(cause), ", ")
	if !r.ao.Recreate {
		changes[0].Action = Failed
		changes[0].Err = fmt.Errorf("%s: immutable field(s) %s changed: set recreate: true on the app to delete and re-create the object, or revert the field: %w", obj.Ref, fields, cause)
		return nil
	}
	if r.a.opts.DryRun {
		for i := range changes {
			changes[i].Action = Recreated
		}
		return nil
	}
	propagation := metav1.DeletePropagationForeground
	if err := ri.Delete(ctx, obj.Ref.Name, metav1.DeleteOptions{PropagationPolicy: &propagation}); err != nil && !apierrors.IsNotFound(err) {
		changes[0].Action, changes[0].Err = Failed, describeError(obj.Ref, "delete to recreate (immutable "+fields+")", err)
		return nil
	}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, 2*time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
		return apierrors.IsNotFound(err), nil
	})
	if err != nil {
		changes[0].Action, changes[0].Err = Failed, fmt.Errorf("%s: still present after delete (finalizers?): %w", obj.Ref, err)
		return nil
	}
	return r.create(ctx, ri, obj, changes, Recreated)
}
