package applier

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

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
	if !a.opts.DryRun {
		return nil, errors.New("applier: Preview needs an Applier built with Options.DryRun")
	}
	cs, err := a.Apply(ctx, plan, ao)
	if err != nil {
		return nil, err
	}
	out := make([]ObjectPreview, len(plan.Objects))
	next := 0
	for i := range plan.Objects {
		n := len(plan.Objects[i].Slices)
		if next+n > len(cs.Changes) {
			return nil, fmt.Errorf("applier: preview: %d changes for a plan of more slices", len(cs.Changes))
		}
		out[i] = ObjectPreview{Object: &plan.Objects[i], Changes: cs.Changes[next : next+n]}
		next += n
	}
	run := &objectRun{a: a, ao: ao, app: plan.App, hpaTargets: hpaTargets(plan)}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.opts.Concurrency)
	for i := range out {
		g.Go(func() error {
			run.preview(gctx, &out[i])
			return nil
		})
	}
	_ = g.Wait()
	return out, ctx.Err()
}

// preview fills p.Live and p.After.
func (r *objectRun) preview(ctx context.Context, p *ObjectPreview) {
	obj := p.Object
	if len(obj.Slices) == 0 {
		return
	}
	ri, err := r.resource(obj.Ref)
	if err != nil {
		p.AfterErr = err
		return
	}
	live, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		live = nil
	case err != nil:
		p.AfterErr = describeError(obj.Ref, "get", err)
		return
	}
	p.Live = live
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
	var drop []fieldpath.Path
	for _, c := range p.Changes {
		for _, y := range c.Yielded {
			if fp := findPath(fields, y.Path); fp != nil {
				drop = append(drop, fp)
			}
		}
	}
	if len(sl) > 1 || len(drop) > 0 {
		next, err := obj.Reslice(s.Manager, subtract(fields, drop))
		if err != nil {
			p.AfterErr = err
			return
		}
		s = withExtras(obj, next, s)
	}
	// Forcing shows what Git wants even where the policy says fail; the
	// conflicts themselves are in Changes.
	after, err := r.a.send(ctx, ri, obj.Ref, s.Manager, s.Object, live != nil, true)
	if err != nil {
		p.AfterErr = err
		return
	}
	if live != nil {
		for _, c := range p.Changes {
			keepHeld(after, live, c.Held)
		}
	}
	p.After = after
}

// keepHeld puts the live value back at each held path (written as the API
// server prints paths): the real apply holds those fields under the
// handoff manager, so they keep their value instead of being reset.
func keepHeld(after, live *unstructured.Unstructured, held []string) {
	if len(held) == 0 {
		return
	}
	set := fieldpath.NewSet()
	for _, e := range live.GetManagedFields() {
		if e.FieldsV1 == nil {
			continue
		}
		s := &fieldpath.Set{}
		if s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)) == nil {
			set = set.Union(s)
		}
	}
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
}
