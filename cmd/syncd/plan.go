package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
)

type planFlags struct {
	kube        kubeFlags
	config      string
	app         string
	path        string
	cacheDir    string
	output      string
	concurrency int
	inventoryNS string
}

func newPlanCommand() *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Use:   "plan --config FILE --app NAME [--path DIR] [-o text|markdown|json]",
		Short: "Preview what applying an app would change, with server-side dry runs (for pull requests)",
		Long: `plan renders the app from --path (a pull-request checkout) or from its
source, and dry-runs every manager's slice with Server-Side Apply under the
app's real field managers (dryRun=All: nothing is written). It reports per
object whether it would be created, updated, left unchanged or recreated, a
unified YAML diff of the live object against the dry-run result (managedFields,
status and server bookkeeping left out; Secret values and fields the app
marks sensitive shown as <redacted>),
the field conflicts the app's policy would meet with the outcome (fail, force
or yield) and the other manager, handoff warnings (fields Git stops setting
that the API server would reset to a default), and fields moving between
managers.

Objects exactly as syncd last applied them (the app's inventory records
their slices' hashes and their live resourceVersion) are reported
unchanged without a dry run, so a plan costs requests in proportion to
what changed. Without a readable inventory every object is dry-run, and
the report says so.

-o text (default) is for a terminal, -o markdown for a pull-request comment
(under GitHub's 65,536-character limit), -o json for tools; see
docs/preview.md for the JSON shape.

An app that declares one of syncd's own objects (anything in syncd's or
the inventory namespace, an inventory Secret, syncd's ClusterRoles and
bindings; docs/security.md) is refused before any dry run: the objects
are named on stderr and plan exits 3.

Exit codes: 0 no changes, 2 changes, 3 blocked by field conflicts, prune
guards or syncd's own objects, 1 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, f) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	fs.StringVar(&f.config, "config", "", "syncd config file (required)")
	fs.StringVar(&f.app, "app", "", "name of the app to preview (required)")
	fs.StringVar(&f.path, "path", "", "directory holding the app's manifests, e.g. a pull-request checkout (default: the app's source)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where Git sources are cached (default ~/.cache/syncd/sources)")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text, markdown or json")
	fs.IntVar(&f.concurrency, "concurrency", applier.DefaultConcurrency, "objects dry-run at once within a stage")
	invNS := os.Getenv("POD_NAMESPACE")
	if invNS == "" {
		invNS = "syncd-system"
	}
	fs.StringVar(&f.inventoryNS, "inventory-namespace", invNS, "namespace of the apps' inventory Secrets, as the daemon runs with: objects get that ApplySet's part-of label, and objects the inventory shows unchanged since syncd applied them are not dry-run")
	return cmd
}

func runPlan(cmd *cobra.Command, f *planFlags) error {
	switch {
	case f.config == "":
		return withCode(exitError, errors.New("--config is required: the syncd config file naming the app"))
	case f.app == "":
		return withCode(exitError, errors.New("--app is required: the name of the app to preview"))
	case f.output != "text" && f.output != "markdown" && f.output != "json":
		return withCode(exitError, fmt.Errorf("-o %q: use text, markdown or json", f.output))
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return withCode(exitError, err)
	}
	cl, err := f.kube.connect()
	if err != nil {
		return withCode(exitError, err)
	}
	report, warnings, err := planReport(cmd.Context(), cl, cfg, f)
	if err != nil {
		if refused := refusedExit(err); refused != err {
			return refused
		}
		return withCode(exitError, err)
	}
	out := cmd.OutOrStdout()
	switch f.output {
	case "json":
		err = report.WriteJSON(out)
	case "markdown":
		err = report.WriteMarkdown(out)
	default:
		for _, w := range warnings {
			fmt.Fprintf(out, "warning: %s\n", w)
		}
		err = report.WriteText(out)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	return planExit(report)
}

// planReport renders the app, dry-runs what changed since syncd last
// applied it and builds the report; it also returns the plan's warnings.
func planReport(ctx context.Context, cl *cluster, cfg *config.Config, f *planFlags) (*preview.Report, []planner.Warning, error) {
	reserved := reservedFor(f.inventoryNS)
	runner, err := reconcile.New(cfg, reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config}, reconcile.Options{CacheDir: f.cacheDir, Concurrency: f.concurrency, Reserved: reserved})
	if err != nil {
		return nil, nil, err
	}
	app, err := runner.App(f.app)
	if err != nil {
		return nil, nil, err
	}
	rendered, err := runner.Render(ctx, app, f.path)
	if err != nil {
		return nil, nil, err
	}
	ao, err := reconcile.ApplyOptions(app)
	if err != nil {
		return nil, nil, err
	}
	// A real apply labels every object as a member of the app's ApplySet;
	// without the label the preview would show it being removed.
	ao.Labels = map[string]string{inventory.LabelPartOf: inventory.AppID(app.Name, f.inventoryNS)}
	// The dry runs, the reads of what is unchanged and the prune
	// preview go through the same identity as the real apply and prune,
	// so RBAC denials show up in the preview.
	dyn, err := runner.Dynamic(app)
	if err != nil {
		return nil, nil, err
	}
	md, err := metadata.NewForConfig(cl.config)
	if err != nil {
		return nil, nil, err
	}
	inv, err := inventory.New(cl.dynamic, md, cl.mapper, inventory.Options{Namespace: f.inventoryNS, Version: version, Reserved: reserved, Config: cl.config})
	if err != nil {
		return nil, nil, err
	}
	defer inv.Stop()
	read, same, notes, err := planUnchanged(ctx, inv, app, rendered.Plan)
	if err != nil {
		return nil, nil, err
	}
	dry := *rendered.Plan
	dry.Objects = nil
	for _, obj := range rendered.Plan.Objects {
		if !same[inventory.KeyOf(obj.Ref)] {
			dry.Objects = append(dry.Objects, obj)
		}
	}
	memo := newDryRunClient(dyn)
	if err := memo.prime(ctx, cl.mapper, &dry, f.concurrency); err != nil {
		return nil, nil, err
	}
	ap, err := applier.New(memo, cl.mapper, applier.Options{DryRun: true, Concurrency: f.concurrency})
	if err != nil {
		return nil, nil, err
	}
	dried, err := ap.Preview(ctx, &dry, ao)
	if err != nil {
		return nil, nil, fmt.Errorf("app %s: dry run: %w", app.Name, err)
	}
	// Back to plan order, the objects not dry-run in their place.
	previews := make([]applier.ObjectPreview, 0, len(rendered.Plan.Objects))
	for i := range rendered.Plan.Objects {
		obj := &rendered.Plan.Objects[i]
		if same[inventory.KeyOf(obj.Ref)] {
			previews = append(previews, applier.ObjectPreview{Object: obj})
			continue
		}
		previews = append(previews, dried[0])
		dried = dried[1:]
	}
	popts := preview.Options{
		NotDryRun: func(obj *planner.Object) bool { return same[inventory.KeyOf(obj.Ref)] },
		Notes:     notes,
	}
	sens, err := redact.ForApp(app)
	if err != nil {
		return nil, nil, err
	}
	if sens != nil {
		popts.Sensitive = sens
	}
	report, err := preview.Build(app.Name, rendered.Plan.Revision, previews, popts)
	if err != nil {
		return nil, nil, fmt.Errorf("app %s: %w", app.Name, err)
	}
	if read == nil {
		report.Notes = append(report.Notes, "prune is not previewed: the inventory could not be read")
		return report, rendered.Plan.Warnings, nil
	}
	// The prune runs only after an apply that completes: a blocking
	// conflict or a refused object refuses it, as it would for real.
	pruned, err := inv.PreviewPrune(ctx, app, rendered.Plan, !report.Blocked() && report.Summary.Errors == 0, read)
	if err != nil {
		report.Notes = append(report.Notes, fmt.Sprintf("prune is not previewed: %v", err))
		return report, rendered.Plan.Warnings, nil
	}
	report.AddPrune(pruned)
	return report, rendered.Plan.Warnings, nil
}

// planUnchanged returns the plan objects that need no dry run because
// they are exactly as syncd last applied them: the app's inventory (one
// GET of its parent) records their slices' hashes and the resourceVersion
// right after that apply, and one metadata LIST per resource and namespace
// of the app's members shows that resourceVersion still live. When the
// inventory is missing or cannot be read, every object is dry-run and the
// notes say why. HorizontalPodAutoscalers are always dry-run: the applier
// decides what to send of the workloads they scale from the HPAs it is
// given. read is what was read, for the prune preview; nil when the
// inventory could not be read (a missing one is read: the app has nothing
// to prune yet).
func planUnchanged(ctx context.Context, inv *inventory.Manager, app config.App, plan *planner.Plan) (read *inventory.Unchanged, same map[inventory.Key]bool, notes []string, err error) {
	u, err := inv.Unchanged(ctx, app, plan)
	switch {
	case ctx.Err() != nil:
		return nil, nil, nil, ctx.Err()
	case err != nil:
		return nil, nil, []string{fmt.Sprintf("every object was dry-run: %v", err)}, nil
	case !u.Exists:
		return u, nil, []string{fmt.Sprintf("every object was dry-run: app %s has no inventory (Secret %s not found: syncd has not applied it yet, or --inventory-namespace is not the daemon's)", app.Name, u.Parent)}, nil
	}
	for _, why := range u.Unlisted {
		notes = append(notes, fmt.Sprintf("objects were dry-run whose live state could not be compared with the inventory: %s", why))
	}
	for k := range u.Objects {
		if k.Group == "autoscaling" && k.Kind == "HorizontalPodAutoscaler" {
			delete(u.Objects, k)
		}
	}
	return u, u.Objects, notes, nil
}

// planExit maps a report to the exit code contract: refused objects 1,
// blocking conflicts or prune guards 3, changes 2, nothing to do 0.
func planExit(r *preview.Report) error {
	switch {
	case r.Summary.Errors > 0:
		return withCode(exitError, fmt.Errorf("app %s: the API server refused %d object(s); see the report", r.App, r.Summary.Errors))
	case r.Blocked() || r.PruneBlocked():
		return withCode(exitConflict, nil)
	case r.Changed():
		return withCode(exitChanges, nil)
	}
	return nil
}
