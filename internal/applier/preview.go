package applier

import (
	"context"
	"errors"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// ObjectPreview is one object of a plan as a dry run sees it: the live
// object, what the API server would store after the apply, and the
// outcome of each of the object's slices.
type ObjectPreview struct {
	// Object is the plan's object.
	Object *planner.Object
	// Live is the object as it is now; nil when it does not exist.
	Live *unstructured.Unstructured
	// After is the object the API server returned for a dry-run apply of
	// everything Git wants of it (yielded fields left out, held fields at
	// their live value); nil when that dry run was refused (AfterErr).
	After    *unstructured.Unstructured
	AfterErr error
	// Changes are the object's slices' outcomes, as Apply reports them
	// in a dry run, one per slice in slice order.
	Changes []Change
}

// PreviewOptions tune one Preview call.
type PreviewOptions struct {
	// Each, when set, is called once per object as soon as its preview
	// is complete, from the worker that dry-ran it (so concurrently with
	// other objects' dry runs), with the object's index in the plan. It
	// lets a caller build per-object output (a diff) while the rest of
	// the plan is still being dry-run. It must not keep p past the call
	// except through the returned slice, which holds the same values.
	Each func(i int, p *ObjectPreview)
}

// Preview dry-runs the plan the way Apply would (every request carries
// dryRun=All; the Applier must have been built with Options.DryRun) and
// returns, per object in plan order, the live object, the object the API
// server would store, and each slice's predicted outcome. Nothing is
// persisted.
//
// A dry run cannot chain requests, so After of an object split between
// several managers comes from one dry-run apply of all the slices' fields
// under the default manager: values are exact, but fields another of the
// app's managers drops are still shown.
func (a *Applier) Preview(ctx context.Context, plan *planner.Plan, ao ApplyOptions) ([]ObjectPreview, error) {
	return a.PreviewWith(ctx, plan, ao, PreviewOptions{})
}

// PreviewWith is Preview with options. Each object is dry-run as Apply
// would and previewed by the same worker right after, stage by stage in
// plan order (bounded by Options.Concurrency), so that reading the
// object and dry-running what Git wants of it overlap with the other
// objects' requests instead of waiting for every dry run to be back.
func (a *Applier) PreviewWith(ctx context.Context, plan *planner.Plan, ao ApplyOptions, po PreviewOptions) ([]ObjectPreview, error) {
	if !a.opts.DryRun {
		return nil, errors.New("applier: Preview needs an Applier built with Options.DryRun")
	}
	if ao.Policy == nil {
		ao.Policy = failPolicy()
	}
	run := &objectRun{a: a, ao: ao, app: plan.App, hpaTargets: hpaTargets(plan)}
	out := make([]ObjectPreview, len(plan.Objects))
	for i := range plan.Objects {
		out[i].Object = &plan.Objects[i]
	}
	// The stages of Apply, without waiting for CRDs: a dry run creates
	// none.
	err := run.inStages(ctx, plan, func(octx context.Context, i int) {
		out[i].Changes = run.apply(octx, out[i].Object)
		run.preview(octx, &out[i])
		if po.Each != nil {
			po.Each(i, &out[i])
		}
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// preview fills p.Live and p.After.
func (r *objectRun) preview(ctx context.Context, p *ObjectPreview) {
	obj := p.Object
	if len(obj.Slices) == 0 {
		return
	}
	c, err := r.resource(obj.Ref)
	if err != nil {
		p.AfterErr = err
		return
	}
	ri := c.ri
	live, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		p.AfterErr = describeError(obj.Ref, "get", err)
		return
	}
	p.Live = live
	if len(p.Changes) > 0 && p.Changes[0].Action == Excluded {
		// Left alone on request: nothing would be sent, After stays nil.
		return
	}
	sl, err := r.prepare(obj, live != nil)
	if err != nil {
		p.AfterErr = err
		return
	}
	s := sl[0]
	fields := fieldpath.NewSet()
	for _, x := range sl {
		fields = fields.Union(x.Fields)
	}
	drop, dropLabels := r.previewDrops(fields, p.Changes)
	if len(sl) > 1 || len(drop) > 0 {
		next, err := obj.Reslice(s.Manager, fields.RecursiveDifference(fieldpath.NewSet(drop...)))
		if err != nil {
			p.AfterErr = err
			return
		}
		s = withExtras(obj, next, s, dropLabels...)
	}
	// Forcing shows what Git wants even where the policy says fail; the
	// conflicts themselves are in Changes.
	after, err := r.a.send(ctx, ri, obj.Ref, request{Manager: s.Manager, Object: s.Object, Force: live != nil, DryRun: true})
	if err != nil && isImmutable(err) && !r.ao.Recreate {
		err = immutableChanged(obj.Ref, err)
	}
	if err != nil {
		p.AfterErr = err
		return
	}
	if live != nil {
		var held []string
		for _, c := range p.Changes {
			held = append(held, c.Resolution().Held...)
		}
		after = keepHeld(after, live, held)
	}
	p.After = after
}

// previewDrops returns the fields the real apply would leave out of the
// slice (those it yields, and another app's inventory label) and the
// labels among them that withExtras must not carry back: without them the
// forced dry run would claim the other app's part-of label and the plan
// would show an update the apply never makes.
func (r *objectRun) previewDrops(fields *fieldpath.Set, changes []Change) ([]fieldpath.Path, []string) {
	var drop []fieldpath.Path
	var labels []string
	for _, c := range changes {
		res := c.Resolution()
		for _, y := range slices.Concat(res.Yielded, res.OtherInventory) {
			if fp := findPath(fields, y.Path); fp != nil {
				drop = append(drop, fp)
			}
		}
		for _, y := range res.OtherInventory {
			if key, ok := r.ownLabel(y.Path); ok {
				labels = append(labels, key)
			}
		}
	}
	return drop, labels
}

// keepHeld returns after with the live value put back at each held path
// (written as the API server prints paths): the real apply holds those
// fields under the handoff manager, so they keep their value instead of
// being reset. It changes a copy: the client may share after with other
// callers (syncd plan's dry-run client remembers its answers).
func keepHeld(after, live *unstructured.Unstructured, held []string) *unstructured.Unstructured {
	if len(held) == 0 {
		return after
	}
	after = after.DeepCopy()
	set := ownership.Decode(live).OwnedExcept(func(string) bool { return false })
	for _, h := range held {
		fp := findPath(set, h)
		if len(fp) == 0 || fp[len(fp)-1].FieldName == nil {
			continue
		}
		v, ok := paths.Lookup(live.Object, fp)
		if !ok {
			continue
		}
		parent, ok := paths.Lookup(after.Object, fp[:len(fp)-1])
		if m, isMap := parent.(map[string]any); ok && isMap {
			m[*fp[len(fp)-1].FieldName] = runtime.DeepCopyJSONValue(v)
		}
	}
	return after
}
