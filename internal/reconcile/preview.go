package reconcile

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/redact"
)

// Preview renders the app (from dir when given, else at its source's
// revision) and reports what applying it would do, writing nothing: the
// render and plan, the refusal of syncd's own objects and the applier
// settings are those of Apply, and the dry runs, the reads of what is
// unchanged and the prune preview go through the app's identity
// (serviceAccountName), so RBAC denials show up in the preview. Objects
// are labelled as members of the app's ApplySet as Apply labels them.
//
// Objects the Runner's inventory shows exactly as syncd last applied them
// are reported unchanged without a dry run (see readBasis); without an
// inventory every object is dry-run and prune is not previewed, and the
// report's notes say so. It returns the plan's warnings beside the report.
// A render refused for declaring syncd's own objects is an error
// (inventory.ReservedErrors), not a report.
func (r *Runner) Preview(ctx context.Context, app config.App, dir string) (*preview.Report, []planner.Warning, error) {
	rendered, err := r.Render(ctx, app, dir)
	if err != nil {
		return nil, nil, err
	}
	plan := rendered.Plan
	spec, err := r.Spec(app)
	if err != nil {
		return nil, nil, err
	}
	target, err := r.Target(ctx, app)
	if err != nil {
		return nil, nil, err
	}
	ao := r.previewApplyOptions(target, spec)
	dyn, err := target.Dynamic(app)
	if err != nil {
		return nil, nil, err
	}
	basis, err := readBasis(ctx, target.Inventory, spec.Inventory, plan)
	if err != nil {
		return nil, nil, err
	}
	previews, err := r.dryRunChanged(ctx, dyn, target.Cluster.Mapper, app, plan, basis, ao)
	if err != nil {
		return nil, nil, err
	}
	report, err := buildPreview(app.Name, spec.Sensitive, spec.Ignore, plan, previews, basis)
	if err != nil {
		return nil, nil, err
	}
	previewPrune(ctx, target.Inventory, spec.Inventory, plan, basis, report)
	return report, plan.Warnings, nil
}

// previewApplyOptions are the applier settings Apply would use, with the
// part-of label of the app's ApplySet that Apply's inventory run adds:
// without it the preview would show the label being removed.
func (r *Runner) previewApplyOptions(t *Target, a *App) applier.ApplyOptions {
	ao := r.applyOptions(a)
	if t.Inventory == nil {
		return ao
	}
	return inventory.WithPartOf(ao, t.Inventory.ID(a.Config.Name))
}

// previewBasis is what the app's inventory says about a plan before any
// dry run.
type previewBasis struct {
	// read is the inventory as read, for the prune preview; nil when it
	// could not be read (a missing inventory is read: the app has nothing
	// to prune yet) or the Runner has none.
	read *inventory.Unchanged
	// same are the plan objects that need no dry run.
	same map[inventory.Key]bool
	// notes say why objects were dry-run that might not have needed it.
	notes []string
}

// notDryRun reports whether obj is previewed without a dry run.
func (b previewBasis) notDryRun(obj *planner.Object) bool {
	return b.same[inventory.KeyOf(obj.Ref)]
}

// readBasis returns the plan objects that need no dry run because
// they are exactly as syncd last applied them: the app's inventory (one
// GET of its parent) records their slices' hashes and the resourceVersion
// right after that apply, and one metadata LIST per resource and namespace
// of the app's members shows that resourceVersion still live
// (inventory.Manager.Unchanged). When the inventory is missing or cannot
// be read, every object is dry-run and the notes say why. inv is the
// inventory of the app's cluster (nil: none).
func readBasis(ctx context.Context, inv *inventory.Manager, app inventory.App, plan *planner.Plan) (previewBasis, error) {
	if inv == nil {
		return previewBasis{notes: []string{"every object was dry-run: syncd runs without an inventory"}}, nil
	}
	u, err := inv.Unchanged(ctx, app, plan)
	switch {
	case ctx.Err() != nil:
		return previewBasis{}, ctx.Err()
	case err != nil:
		return previewBasis{notes: []string{fmt.Sprintf("every object was dry-run: %v", err)}}, nil
	case !u.Exists:
		return previewBasis{read: u, notes: []string{fmt.Sprintf("every object was dry-run: app %s has no inventory (Secret %s not found: syncd has not applied it yet, or --inventory-namespace is not the daemon's)", app.Name, u.Parent)}}, nil
	}
	b := previewBasis{read: u, same: u.Objects}
	for _, why := range u.Unlisted {
		b.notes = append(b.notes, fmt.Sprintf("objects were dry-run whose live state could not be compared with the inventory: %s", why))
	}
	for k := range u.Objects {
		if alwaysDryRun(k) {
			delete(u.Objects, k)
		}
	}
	return b, nil
}

// alwaysDryRun reports whether an object of kind k is dry-run even when
// unchanged: HorizontalPodAutoscalers, since the applier decides what to
// send of the workloads they scale from the HPAs it is given.
func alwaysDryRun(k inventory.Key) bool {
	return k.Group == "autoscaling" && k.Kind == "HorizontalPodAutoscaler"
}

// dryRunChanged dry-runs the plan's objects that basis does not show
// unchanged through a memoising client over dyn (dryRunClient) and
// returns a preview of every plan object (inPlanOrder).
func (r *Runner) dryRunChanged(ctx context.Context, dyn dynamic.Interface, mapper meta.RESTMapper, app config.App, plan *planner.Plan, basis previewBasis, ao applier.ApplyOptions) ([]applier.ObjectPreview, error) {
	dry := *plan
	dry.Objects = nil
	for _, obj := range plan.Objects {
		if !basis.notDryRun(&obj) {
			dry.Objects = append(dry.Objects, obj)
		}
	}
	memo := newDryRunClient(dyn)
	ap, err := applier.New(memo, mapper, applier.Options{DryRun: true, Concurrency: r.opts.Concurrency})
	if err != nil {
		return nil, err
	}
	if err := memo.prime(ctx, mapper, &dry, r.opts.Concurrency); err != nil {
		return nil, err
	}
	dried, err := ap.Preview(ctx, &dry, ao)
	if err != nil {
		return nil, fmt.Errorf("app %s: dry run: %w", app.Name, err)
	}
	return inPlanOrder(plan, basis, dried), nil
}

// inPlanOrder returns a preview of every plan object in plan order: the
// dried ones (the dry runs of the objects basis does not show unchanged,
// in plan order) and, in their place, the others with only the object
// set.
func inPlanOrder(plan *planner.Plan, basis previewBasis, dried []applier.ObjectPreview) []applier.ObjectPreview {
	previews := make([]applier.ObjectPreview, 0, len(plan.Objects))
	for i := range plan.Objects {
		obj := &plan.Objects[i]
		if basis.notDryRun(obj) {
			previews = append(previews, applier.ObjectPreview{Object: obj})
			continue
		}
		previews = append(previews, dried[0])
		dried = dried[1:]
	}
	return previews
}

// buildPreview builds the report of the previews, the app's sensitive
// fields masked and the fields its ignore rules match marked.
func buildPreview(app string, sens *redact.Rules, ign *ignore.Rules, plan *planner.Plan, previews []applier.ObjectPreview, basis previewBasis) (*preview.Report, error) {
	popts := preview.Options{NotDryRun: basis.notDryRun, Notes: basis.notes}
	popts.Ignore = ign
	if sens = plan.Sensitive(sens); sens != nil {
		popts.Sensitive = sens
	}
	report, err := preview.Build(app, plan.Revision, previews, popts)
	if err != nil {
		return nil, fmt.Errorf("app %s: %w", app, err)
	}
	return report, nil
}

// previewPrune adds what the prune after the apply would do to report, or
// a note saying why prune is not previewed. The prune runs only after an
// apply that completes: a blocking conflict or a refused object refuses
// it, as it would for real. inv is the inventory of the app's cluster.
func previewPrune(ctx context.Context, inv *inventory.Manager, app inventory.App, plan *planner.Plan, basis previewBasis, report *preview.Report) {
	switch {
	case inv == nil:
		report.Notes = append(report.Notes, "prune is not previewed: syncd runs without an inventory")
		return
	case basis.read == nil:
		report.Notes = append(report.Notes, "prune is not previewed: the inventory could not be read")
		return
	}
	applied := !report.Blocked() && report.Summary.Errors == 0
	pruned, err := inv.PreviewPrune(ctx, app, plan, applied, basis.read)
	if err != nil {
		report.Notes = append(report.Notes, fmt.Sprintf("prune is not previewed: %v", err))
		return
	}
	report.AddPrune(pruned)
}
