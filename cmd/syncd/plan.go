package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/spf13/cobra"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
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
	appFile     string
	sourceFile  string
	namespace   string
	progress    progressFlags
}

func newPlanCommand() *cobra.Command {
	f := &planFlags{}
	cmd := &cobra.Command{
		Aliases: []string{"diff"},
		Use:     "plan (--config FILE --app NAME | --app-file FILE [--source-file FILE] | --app NAME [-n NS]) [--path DIR] [-o text|markdown|json]",
		Short:   "Preview what applying an app would change, with server-side dry runs (for pull requests; alias: diff)",
		Long: `plan renders the app from --path (a pull-request checkout) or from its
source, and dry-runs every manager's slice with Server-Side Apply under the
app's real field managers (dryRun=All: nothing is written). It reports per
object whether it would be created, updated, left unchanged or recreated,
a unified YAML diff of the live object against the dry-run result
(managedFields, status and server bookkeeping left out; Secret values and
fields the app marks sensitive shown as <redacted>), the field conflicts
the app's policy would meet with the outcome (fail, force or yield) and
the other manager, handoff warnings (fields Git stops setting that the API
server would reset to a default), and fields moving between managers.
syncd diff is the same command.

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

The app is an apps[] entry of a config file (--config FILE --app NAME),
or an App object (docs/apps.md): read from a file (--app-file FILE, its
GitSource in the same file or --source-file FILE) or from the cluster
(--app NAME without --config, in -n NS or the kubeconfig context's
namespace, with its GitSource and the Secrets it names). An App is
translated as the controller translates it, so the preview is the one its
reconcile would apply, and is the same as for the equivalent file app
(named <namespace>-<name>). With --path the checkout is the source: no
GitSource or Git credential is read (an App with spec.decryption still
needs its keys Secret).

Progress of the dry runs goes to stderr (as for apply; none with
--quiet); stdout has the report.

Exit codes: 0 no changes, 2 changes, 3 blocked by field conflicts, prune
guards or syncd's own objects, 1 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runPlan(cmd, f) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	fs.StringVar(&f.config, "config", "", "syncd config file naming the app")
	fs.StringVar(&f.app, "app", "", "name of the app to preview: an app of --config, or without --config an App object in the cluster")
	_ = cmd.RegisterFlagCompletionFunc("app", completeConfigApp(&f.config, func() *objectFlags { return &objectFlags{kube: f.kube, namespace: f.namespace} }))
	fs.StringVar(&f.appFile, "app-file", "", "file holding the App object to preview (and its GitSource, unless --source-file or --path)")
	fs.StringVar(&f.sourceFile, "source-file", "", "file holding the GitSource of the --app-file App")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "namespace of the App (--app without --config, or --app-file without metadata.namespace; default: the kubeconfig context's)")
	fs.StringVar(&f.path, "path", "", "directory holding the app's manifests, e.g. a pull-request checkout (default: the app's source)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where Git sources are cached (default ~/.cache/syncd/sources)")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text, markdown or json")
	fs.IntVar(&f.concurrency, "concurrency", applier.DefaultConcurrency, "objects dry-run at once within a stage")
	f.progress.register(fs)
	invNS := os.Getenv("POD_NAMESPACE")
	if invNS == "" {
		invNS = "syncd-system"
	}
	fs.StringVar(&f.inventoryNS, "inventory-namespace", invNS, "namespace of the apps' inventory Secrets, as the daemon runs with: objects get that ApplySet's part-of label, and objects the inventory shows unchanged since syncd applied them are not dry-run")
	return cmd
}

func runPlan(cmd *cobra.Command, f *planFlags) error {
	if err := checkPlanFlags(f); err != nil {
		return withCode(exitError, err)
	}
	var target *planTarget
	var err error
	if f.config != "" {
		if target, err = planFileTarget(f); err != nil {
			return withCode(exitError, err)
		}
	}
	cl, err := f.kube.connect()
	if err != nil {
		return withCode(exitError, err)
	}
	if target == nil {
		if target, err = planObjectTarget(cmd.Context(), cl, f); err != nil {
			return withCode(exitError, err)
		}
	}
	defer target.cleanup()
	progress := f.progress.reporter(cmd.ErrOrStderr(), "dry-run")
	report, warnings, err := planReport(cmd.Context(), cl, target, f, progress)
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

// checkPlanFlags says which form of plan the flags ask for, or what is
// missing or contradictory.
func checkPlanFlags(f *planFlags) error {
	switch {
	case f.config != "" && f.appFile != "":
		return errors.New("--config and --app-file both given: preview an app of the config file or an App object, not both")
	case f.config != "" && f.app == "":
		return errors.New("--app is required with --config: the name of the app to preview")
	case f.config != "" && (f.sourceFile != "" || f.namespace != ""):
		return errors.New("--source-file and -n are for App objects (--app-file, or --app without --config), not for --config")
	case f.appFile != "" && f.app != "":
		return errors.New("--app-file and --app both given: the App is the one in the file; drop --app")
	case f.config == "" && f.appFile == "" && f.app == "":
		return errors.New("name the app to preview: --config FILE --app NAME, --app-file FILE, or --app NAME [-n NS] for an App in the cluster")
	case f.sourceFile != "" && f.appFile == "":
		return errors.New("--source-file is the GitSource of --app-file; an App read from the cluster uses its GitSource there")
	case f.output != "text" && f.output != "markdown" && f.output != "json":
		return fmt.Errorf("-o %q: use text, markdown or json", f.output)
	}
	return nil
}

// planReport previews the app through the library (reconcile.Runner.Preview)
// with the clients and inventory the command line asks for; it also
// returns the plan's warnings.
func planReport(ctx context.Context, cl *cluster, target *planTarget, f *planFlags, progress *progressReporter) (*preview.Report, []planner.Warning, error) {
	cfg := target.cfg
	reserved := reservedFor(f.inventoryNS)
	md, err := metadata.NewForConfig(cl.config)
	if err != nil {
		return nil, nil, err
	}
	invOpts := inventory.Options{Namespace: f.inventoryNS, Version: version, Reserved: reserved}
	local := invOpts
	local.Config = cl.config
	inv, err := inventory.New(cl.dynamic, md, cl.mapper, local)
	if err != nil {
		return nil, nil, err
	}
	defer inv.Stop()
	targets := f.kube.remoteTargets(cl, &invOpts)
	if target.variablesNS != "" { // an App object: its spec.cluster's Secret in its namespace, as the controller reads it
		targets = targets.ForAppObject(target.variablesNS)
	}
	defer targets.Close()
	opts := reconcile.Options{CacheDir: f.cacheDir, Concurrency: f.concurrency, Reserved: reserved, Inventory: inv, Namespace: syncdNamespace(), Targets: targets, Progress: progress.progress()}
	if target.variablesNS != "" { // an App object: its namespace, as its service account
		opts.Namespace, opts.VariablesAsTenant = target.variablesNS, true
	}
	runner, err := reconcile.New(cfg, reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config}, opts)
	if err != nil {
		return nil, nil, err
	}
	app, err := runner.App(target.app)
	if err != nil {
		return nil, nil, err
	}
	progress.Start(app.Name)
	defer progress.Stop()
	return runner.Preview(ctx, app, f.path)
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
