package reconcile

import (
	"context"
	"fmt"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/identity"
)

// DetectDrift is the one-shot drift check of an app, the one `syncd
// drift` and `syncd ui` run: it renders the app (from dir when set, else
// from its source), reads its live objects on its cluster as its identity
// (an object it may not read is a warning, never a finding), compares
// fields whose live value is not Git's text with what the API server
// stores for them (one dry-run apply per such slice), and returns
// drift.Detect's report with the normalisation's warnings added. Nothing
// is written to the cluster.
func (r *Runner) DetectDrift(ctx context.Context, app config.App, dir string) (*drift.Report, error) {
	rendered, err := r.Render(ctx, app, dir)
	if err != nil {
		return nil, err
	}
	target, err := r.Target(ctx, app)
	if err != nil {
		return nil, err
	}
	dyn, err := target.Dynamic(app)
	if err != nil {
		return nil, err
	}
	live, unreadable, err := drift.Live(ctx, dyn, target.Cluster.Mapper, rendered.Plan)
	if err != nil {
		return nil, fmt.Errorf("app %s: read live objects: %w", app.Name, err)
	}
	opts, err := DriftOptions(app)
	if err != nil {
		return nil, err
	}
	opts.Sensitive = rendered.Plan.Sensitive(opts.Sensitive)
	opts.Unreadable = drift.Unreadable{By: identity.Name(TenantOf(app)), Objects: unreadable}
	norm, err := r.Normalizer(app)
	if err != nil {
		return nil, err
	}
	normalized, warns := drift.Normalize(ctx, norm, rendered.Plan, live, opts)
	opts.Normalized = normalized
	rep := drift.Detect(rendered.Plan, live, opts)
	rep.Warnings = append(rep.Warnings, warns...)
	return rep, nil
}
