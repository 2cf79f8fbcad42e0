package applier

import (
	"context"
	"errors"
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// sliceError is a failure of one slice of an object: the executor
// returns it, and write records it on that slice's Change (a failure that
// concerns the whole object goes to the first slice).
type sliceError struct {
	slice int
	err   error
}

func (e *sliceError) Error() string { return e.err.Error() }
func (e *sliceError) Unwrap() error { return e.err }

// failAt attributes err to slice i.
func failAt(i int, err error) error {
	if i == noSlice {
		i = 0
	}
	return &sliceError{slice: i, err: err}
}

// maxResolves bounds how often one slice's conflicts are resolved when
// they were not predicted (the request that meets them is the first of
// the slice): once for the hold's dry run, once for the apply.
const maxResolves = 2

// mover brings one existing object to the plan: it predicts conflicts
// and resolves them by policy, then sends the steps planUpdate plans. A
// dry-run applier sends dry runs and stops where a step would need an
// earlier one's write.
type mover struct {
	r       *objectRun
	ri      dynamic.ResourceInterface
	mri     metadata.ResourceInterface
	obj     *planner.Object
	changes []Change
	// sl are the slices as they will be sent; resolving a conflict by
	// yielding rewrites one.
	sl    []planner.Slice
	force []bool
	// live is the object as of the last write (or the read).
	live *unstructured.Unstructured
	// recreated is the metadata of the object created again after an
	// immutable field (nil until then).
	recreated metav1.Object
	// own is the ownership read before the first write: the moves are
	// planned from it.
	own      ownership.Ownership
	old      []planner.FieldManager
	am       appManagers
	moving   bool
	predicts bool
	moved    []bool
	resolves []int
}

// update brings an existing object to the plan, moving fields between the
// app's managers without letting any disappear, resolving conflicts with
// other managers by policy, and holding fields that would be reset. It
// returns the metadata of the object as the last request left it.
func (r *objectRun) update(ctx context.Context, c objectClient, obj *planner.Object, live *unstructured.Unstructured, changes []Change) (metav1.Object, error) {
	m, err := r.newMover(ctx, c, obj, live, changes)
	if err != nil {
		return nil, err
	}
	if m.predicts {
		if err := m.predict(ctx); err != nil {
			return nil, err
		}
		if m.dry() && m.moving {
			// A dry run cannot chain the two phases of a move: the
			// first phase's preview is the answer.
			return m.result(), nil
		}
	}
	return m.run(ctx)
}

// newMover reads what the moves depend on: the slices to send, the
// object's values (a watch cache answers with metadata only), its
// ownership and the app's old managers on it.
func (r *objectRun) newMover(ctx context.Context, c objectClient, obj *planner.Object, live *unstructured.Unstructured, changes []Change) (*mover, error) {
	ri := c.ri
	sl, err := r.prepare(obj, true)
	if err != nil {
		return nil, failAt(0, err)
	}
	if metadataOnly(live) {
		// Telling what an apply changed (or, in a dry run, would
		// change) needs the values.
		if live, err = ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{}); err != nil {
			return nil, failAt(0, describeError(obj.Ref, "get", err))
		}
	}
	if sl, err = r.keepIgnored(obj, live, sl); err != nil {
		return nil, failAt(0, err)
	}
	m := &mover{r: r, ri: ri, mri: c.mri, obj: obj, changes: changes, sl: sl, live: live,
		own: ownership.Decode(live), force: make([]bool, len(sl)),
		moved: make([]bool, len(sl)), resolves: make([]int, len(sl))}
	m.old = oldManagers(live, r.app, sl, m.own)
	m.am = newAppManagers(m.fields(), m.old)
	m.moving = m.input().moving()
	m.predicts = len(sl) > 1 || m.moving || m.dry()
	return m, nil
}

// oldManagers returns the app's managers the object's managers
// annotation records that are not in the plan and still own something.
func oldManagers(live *unstructured.Unstructured, app string, sl []planner.Slice, own ownership.Ownership) []planner.FieldManager {
	current := map[planner.FieldManager]bool{}
	for _, s := range sl {
		current[s.Manager] = true
	}
	var old []planner.FieldManager
	for _, m := range managersOf(live, app) {
		if !current[m] && own.Has(string(m)) {
			old = append(old, m)
		}
	}
	return old
}

// dry reports whether the applier only previews.
func (m *mover) dry() bool { return m.r.a.opts.DryRun }

// fields returns the slices' managers and fields.
func (m *mover) fields() []sliceFields { return slicesFields(m.sl) }

// input returns the planner's view of the object as it stands.
func (m *mover) input() moveInput {
	return moveInput{Slices: m.fields(), Live: m.own, Old: m.old, Force: m.force,
		ReleaseHandoff: m.r.ao.ReleaseHandoff, Moving: m.moving}
}

// sliceWith returns slice i cut to fields (the slice itself when they
// are its own fields), with the labels and annotations prepare added.
func (m *mover) sliceWith(i int, fields *fieldpath.Set) (planner.Slice, error) {
	s := m.sl[i]
	if fields.Equals(s.Fields) {
		return s, nil
	}
	next, err := m.obj.Reslice(s.Manager, fields)
	if err != nil {
		return planner.Slice{}, err
	}
	return withExtras(m.obj, next, s), nil
}

// firstRequest returns what slice i sends first: during a move its
// share, else its exact slice.
func (m *mover) firstRequest(i int) (planner.Slice, error) {
	if !m.moving {
		return m.sl[i], nil
	}
	fields, _ := m.input().share(i)
	return m.sliceWith(i, fields)
}

// predict dry-runs every slice's first request before anything is
// written, so that a failing policy leaves the object untouched, and
// resolves the conflicts it meets. (During a move the share is dry-run:
// an exact slice that gives a field away would be refused while nobody
// else owns the field yet.)
func (m *mover) predict(ctx context.Context) error {
	for i := range m.sl {
		if err := m.predictSlice(ctx, i); err != nil {
			return err
		}
	}
	return nil
}

// predictSlice dry-runs slice i's first request and resolves its
// conflicts; in a dry run of a move, the answer is the slice's outcome.
func (m *mover) predictSlice(ctx context.Context, i int) error {
	p, err := m.firstRequest(i)
	if err != nil {
		return failAt(i, err)
	}
	res, err := m.r.a.send(ctx, m.ri, m.obj.Ref, request{Manager: p.Manager, Object: p.Object, DryRun: true})
	if err != nil {
		cs := FieldConflicts(err)
		if cs == nil {
			return failAt(i, err)
		}
		if err := m.resolve(ctx, i, refusal{ri: m.ri, sent: p.Object, conflicts: cs}); err != nil {
			return err
		}
		if m.dry() && m.moving {
			if p, err = m.firstRequest(i); err == nil {
				res, err = m.r.a.send(ctx, m.ri, m.obj.Ref, request{Manager: p.Manager, Object: p.Object, Force: m.force[i], DryRun: true})
			}
			if err != nil {
				return failAt(i, err)
			}
		}
	}
	if m.dry() && m.moving {
		m.changes[i].Action, m.changes[i].Changed = m.r.outcome(write{before: m.live, after: res}, &m.changes[i])
		if _, err := m.r.takeOver(ctx, m.ri, m.obj, res, []planner.FieldManager{p.Manager}, m.changes[i:i+1]); err != nil {
			return failAt(i, err)
		}
	}
	return nil
}

// resolve decides slice i's conflicts by policy and adopts the decision.
func (m *mover) resolve(ctx context.Context, i int, rf refusal) error {
	m.resolves[i]++
	res, err := m.r.resolve(ctx, m.obj, m.sl[i], rf, m.am)
	if err != nil {
		res.record(&m.changes[i])
		return failAt(i, err)
	}
	m.sl[i] = res.slice
	m.force[i] = m.force[i] || res.force
	res.record(&m.changes[i])
	return nil
}

// errReplan says a step met conflicts nobody predicted and resolved
// them: the slice's steps are planned again.
var errReplan = errors.New("replan")

// errRecreated says the object was deleted and created again (an
// immutable field changed): no step is left.
var errRecreated = errors.New("recreated")

// run sends the planned steps in order. In a dry run it stops at the
// first step that needs the writes before it (old managers letting go,
// the takeover, handoff managers letting go).
func (m *mover) run(ctx context.Context) (metav1.Object, error) {
	steps := planUpdate(m.input())
	for k := 0; k < len(steps); k++ {
		st := steps[k]
		if m.dry() && chained(st.Purpose) {
			break
		}
		more, err := m.do(ctx, st)
		if errors.Is(err, errRecreated) {
			return m.result(), nil
		}
		if errors.Is(err, errReplan) {
			steps = planUpdate(m.input())
			k = firstStepOf(steps, st.Slice) - 1
			continue
		}
		if err != nil {
			return nil, err
		}
		steps = append(steps, more...)
	}
	return m.result(), nil
}

// result is the metadata of the object as the mover left it: the object
// created again, else the last answer (nil when there is none).
func (m *mover) result() metav1.Object {
	switch {
	case m.recreated != nil:
		return m.recreated
	case m.live == nil:
		return nil
	}
	return m.live
}

// chained reports whether a step builds on the writes of the steps
// before it, so that a dry run cannot preview it.
func chained(p Purpose) bool {
	return p == PurposeRelease || p == PurposeTakeover || p == PurposeLetGo
}

// firstStepOf returns the index of slice i's first hold or exact step.
func firstStepOf(steps []step, i int) int {
	for k, st := range steps {
		if st.Slice == i && (st.Purpose == PurposeHold || st.Purpose == PurposeExact) {
			return k
		}
	}
	return len(steps)
}

// do sends one step and returns the steps it adds (the takeover adds the
// handoff managers' releases, planned on the ownership it leaves).
func (m *mover) do(ctx context.Context, st step) ([]step, error) {
	switch st.Purpose {
	case PurposeShare:
		return nil, m.share(ctx, st)
	case PurposeHold:
		return nil, m.hold(ctx, st)
	case PurposeExact:
		return nil, m.exact(ctx, st)
	case PurposeRelease:
		return nil, m.release(ctx, st)
	case PurposeTakeover:
		return m.takeover(ctx)
	case PurposeLetGo:
		return nil, m.letGo(ctx, st)
	}
	return nil, failAt(st.Slice, fmt.Errorf("%s: no step %q", m.obj.Ref, st.Purpose))
}

// share sends the first phase of a move for one slice, with force (the
// fields are the app's own).
func (m *mover) share(ctx context.Context, st step) error {
	p, err := m.sliceWith(st.Slice, st.Fields)
	if err != nil {
		return failAt(st.Slice, err)
	}
	res, err := m.r.a.send(ctx, m.ri, m.obj.Ref, request{Manager: p.Manager, Object: p.Object, Force: true})
	if err != nil {
		return failAt(st.Slice, err)
	}
	m.moved[st.Slice] = res.GetResourceVersion() != m.live.GetResourceVersion() && changedFor(p.Manager, m.live, res)
	m.live = res
	return nil
}

// hold keeps what the step's manager drops and would reset under its
// handoff manager. For a slice, the hold's dry run is the slice's first
// request when conflicts were not predicted, so it is the one that meets
// them: they are resolved by policy as the apply would, and the slice's
// steps planned again.
func (m *mover) hold(ctx context.Context, st step) error {
	next := request{Manager: st.Manager, Object: identity(m.obj), Force: true}
	if st.Slice != noSlice {
		next = request{Manager: st.Manager, Object: m.sl[st.Slice].Object, Force: st.Force}
	}
	held, err := m.r.hold(ctx, m.ri, m.obj, next, st.Fields)
	if cs := FieldConflicts(err); cs != nil && m.unpredicted(st) {
		if err := m.resolve(ctx, st.Slice, refusal{ri: m.ri, sent: next.Object, conflicts: cs}); err != nil {
			return err
		}
		return errReplan
	}
	if err != nil {
		return failAt(st.Slice, err)
	}
	if st.Slice != noSlice {
		m.changes[st.Slice].setHeld(held)
	}
	return nil
}

// unpredicted reports whether a conflict met by st is news: conflicts
// were not predicted, st belongs to a slice, and that slice's conflicts
// have not been resolved too often already.
func (m *mover) unpredicted(st step) bool {
	return !m.predicts && st.Slice != noSlice && m.resolves[st.Slice] < maxResolves
}

// exact sends a slice's exact apply over the live object and records its
// outcome; an immutable field recreates the object (when allowed).
func (m *mover) exact(ctx context.Context, st step) error {
	s := m.sl[st.Slice]
	w, err := m.r.applyOver(ctx, m.ri, m.obj.Ref, s, st.Force, m.live)
	if cs := FieldConflicts(err); cs != nil && m.unpredicted(st) {
		if err := m.resolve(ctx, st.Slice, refusal{ri: m.ri, sent: s.Object, conflicts: cs}); err != nil {
			return err
		}
		return errReplan
	}
	if err != nil && isImmutable(err) {
		created, err := m.r.recreate(ctx, objectClient{ri: m.ri, mri: m.mri}, m.obj, m.changes, err)
		if err != nil {
			return err
		}
		m.recreated = created
		return errRecreated
	}
	if err != nil {
		return failAt(st.Slice, err)
	}
	c := &m.changes[st.Slice]
	c.Action, c.Changed = m.r.outcome(w, c)
	if m.moved[st.Slice] && c.Action == Unchanged {
		c.Action = Configured
	}
	if m.dry() {
		// Each slice's dry run is applied over the object as it is:
		// its own answer says what its manager would take over.
		if _, err := m.r.takeOver(ctx, m.ri, m.obj, w.after, []planner.FieldManager{s.Manager}, m.changes[st.Slice:st.Slice+1]); err != nil {
			return failAt(st.Slice, err)
		}
	}
	m.live = w.after
	return nil
}

// release lets an old manager go of every field.
func (m *mover) release(ctx context.Context, st step) error {
	res, err := m.r.a.send(ctx, m.ri, m.obj.Ref, request{Manager: st.Manager, Object: identity(m.obj), Force: true})
	if err != nil {
		return failAt(0, fmt.Errorf("%s: release old manager %s: %w", m.obj.Ref, st.Manager, err))
	}
	m.live = res
	c := &m.changes[0]
	rr := c.resolvedRecord()
	rr.Migrated = append(rr.Migrated, string(st.Manager))
	if c.Action == Unchanged {
		c.Action = Configured
	}
	return nil
}

// takeover makes the fields the app's managers now share with the tools
// that applied the object before syncd (client-side kubectl apply, the
// managers the app migrates from) the app's alone, and plans the handoff
// managers' releases on the ownership that leaves.
func (m *mover) takeover(ctx context.Context) ([]step, error) {
	managers := make([]planner.FieldManager, len(m.sl))
	for i, s := range m.sl {
		managers[i] = s.Manager
	}
	live, err := m.r.takeOver(ctx, m.ri, m.obj, m.live, managers, m.changes)
	if err != nil {
		return nil, failAt(0, err)
	}
	m.live = live
	return planLetGo(ownership.Decode(live), m.am, m.r.ao.ReleaseHandoff), nil
}

// letGo releases one of the app's handoff managers.
func (m *mover) letGo(ctx context.Context, st step) error {
	res, err := m.r.a.send(ctx, m.ri, m.obj.Ref, request{Manager: st.Manager, Object: identity(m.obj), Force: true})
	if err != nil {
		return failAt(0, fmt.Errorf("%s: release handoff manager %s: %w", m.obj.Ref, st.Manager, err))
	}
	m.live = res
	return nil
}
