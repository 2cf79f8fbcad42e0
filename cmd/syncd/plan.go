package main

import (
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/reconcile"
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
status and server bookkeeping left out; Secret values shown as <redacted>),
the field conflicts the app's policy would meet with the outcome (fail, force
or yield) and the other manager, handoff warnings (fields Git stops setting
that the API server would reset to a default), and fields moving between
managers.

-o text (default) is for a terminal, -o markdown for a pull-request comment
(under GitHub's 65,536-character limit), -o json for tools; see
docs/preview.md for the JSON shape.

Exit codes: 0 no changes, 2 changes, 3 blocked by field conflicts, 1 error.`,
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
	fs.StringVar(&f.inventoryNS, "inventory-namespace", invNS, "namespace of the apps' inventory Secrets, as the daemon runs with: objects get that ApplySet's part-of label (nothing is read from it)")
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
	runner, err := reconcile.New(cfg, reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config}, reconcile.Options{CacheDir: f.cacheDir, Concurrency: f.concurrency})
	if err != nil {
		return withCode(exitError, err)
	}
	app, err := runner.App(f.app)
	if err != nil {
		return withCode(exitError, err)
	}
	ctx := cmd.Context()
	rendered, err := runner.Render(ctx, app, f.path)
	if err != nil {
		return withCode(exitError, err)
	}
	ao, err := reconcile.ApplyOptions(app)
	if err != nil {
		return withCode(exitError, err)
	}
	// A real apply labels every object as a member of the app's ApplySet;
	// without the label the preview would show it being removed.
	ao.Labels = map[string]string{inventory.LabelPartOf: inventory.AppID(app.Name, f.inventoryNS)}
	dyn := cl.dynamic
	if app.ServiceAccountName != "" {
		// The dry runs go through the same identity as the real apply,
		// so RBAC denials show up in the preview.
		cfg := rest.CopyConfig(cl.config)
		cfg.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + app.Namespace + ":" + app.ServiceAccountName}
		if dyn, err = dynamic.NewForConfig(cfg); err != nil {
			return withCode(exitError, fmt.Errorf("app %s: impersonate %s: %w", app.Name, app.ServiceAccountName, err))
		}
	}
	ap, err := applier.New(dyn, cl.mapper, applier.Options{DryRun: true, Concurrency: f.concurrency})
	if err != nil {
		return withCode(exitError, err)
	}
	previews, err := ap.Preview(ctx, rendered.Plan, ao)
	if err != nil {
		return withCode(exitError, fmt.Errorf("app %s: dry run: %w", app.Name, err))
	}
	report, err := preview.Build(app.Name, rendered.Plan.Revision, previews)
	if err != nil {
		return withCode(exitError, fmt.Errorf("app %s: %w", app.Name, err))
	}
	out := cmd.OutOrStdout()
	switch f.output {
	case "json":
		err = report.WriteJSON(out)
	case "markdown":
		err = report.WriteMarkdown(out)
	default:
		for _, w := range rendered.Plan.Warnings {
			fmt.Fprintf(out, "warning: %s\n", w)
		}
		err = report.WriteText(out)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	return planExit(report)
}

// planExit maps a report to the exit code contract: refused objects 1,
// blocking conflicts 3, changes 2, nothing to do 0.
func planExit(r *preview.Report) error {
	switch {
	case r.Summary.Errors > 0:
		return withCode(exitError, fmt.Errorf("app %s: the API server refused %d object(s); see the report", r.App, r.Summary.Errors))
	case r.Blocked():
		return withCode(exitConflict, nil)
	case r.Changed():
		return withCode(exitChanges, nil)
	}
	return nil
}
