package main

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/depends"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/renderproc"
)

type applyFlags struct {
	kube        kubeFlags
	inventory   inventoryFlags
	config      string
	app         string
	cacheDir    string
	path        string
	manager     string
	namespace   string
	dryRun      bool
	concurrency int
	progress    progressFlags
}

func newApplyCommand() *cobra.Command {
	f := &applyFlags{}
	cmd := &cobra.Command{
		Use:   "apply (--config FILE [--app NAME] [--path DIR] | --path DIR --manager NAME [--namespace NS]) [--dry-run]",
		Short: "Apply an app from its Git source, or a directory as one field manager, with Server-Side Apply",
		Long: `With --config, apply runs each app (or --app) once: it resolves the app's
Git revision, renders and validates its manifests, splits each object between
the app's field managers and applies the slices under the app's conflict
policy. --path DIR renders the app from DIR instead of its source (a
pull-request checkout).

Without --config, apply reads every .yaml, .yml and .json file below
--path (multi-document files included), checks every document, maps each
kind through the cluster's discovery, and applies each object with
Server-Side Apply under the field manager --manager. It never forces: a field another manager owns with a
different value is reported as a conflict naming the field and its manager.

If any document is invalid (bad YAML, no kind, unknown kind, managedFields
present) nothing from the directory is applied.

With --config and no --app, the apps are applied in dependency order: an
app after every app its dependsOn names. An app whose dependency failed
(or was itself not applied) is not applied, and says which one; apps that
do not depend on it still are. --app applies that app alone and does not
check its dependsOn (the output notes it).

With --config, an app that declares one of syncd's own objects (anything
in syncd's or the inventory namespace, an inventory Secret, syncd's
ClusterRoles and bindings; docs/security.md) is refused before anything is
applied, exit 3, unless the app sets installsSyncd: true.

Progress goes to stderr, stage by stage: a line kept up to date on a
terminal, a line per finished stage otherwise, none with --quiet; stdout
has the result.

Exit codes: 0 applied, 1 error, 3 field conflicts or syncd's own objects.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runApply(cmd, f) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	f.inventory.register(fs, false)
	fs.StringVar(&f.config, "config", "", "syncd.yaml: apply its apps")
	fs.StringVar(&f.app, "app", "", "with --config: only this app, its dependsOn not checked (default: every app, in dependency order)")
	_ = cmd.RegisterFlagCompletionFunc("app", completeConfigApp(&f.config, nil))
	fs.StringVar(&f.cacheDir, "cache-dir", "", "with --config: where Git sources are cached (default ~/.cache/syncd/sources)")
	fs.StringVar(&f.path, "path", "", "directory of manifests to apply (with --config: render the app from here instead of its source)")
	fs.StringVar(&f.manager, "manager", "", "without --config: field manager name to apply as (keep it stable across runs)")
	fs.StringVarP(&f.namespace, "namespace", "n", "", "namespace for namespaced objects that set none (default: the kubeconfig context's)")
	fs.BoolVar(&f.dryRun, "dry-run", false, "send every request with dryRun=All: show what would happen, persist nothing")
	fs.IntVar(&f.concurrency, "concurrency", applier.DefaultConcurrency, "objects applied at once within a stage")
	f.progress.register(fs)
	return cmd
}

func runApply(cmd *cobra.Command, f *applyFlags) error {
	if f.config != "" {
		return runApplyConfig(cmd, f)
	}
	if f.path == "" {
		return withCode(exitError, errors.New("--path is required: the directory of manifests to apply"))
	}
	if f.manager == "" {
		return withCode(exitError, errors.New("--manager is required: the field manager to apply as (e.g. syncd-web)"))
	}
	manifests, err := planner.ReadDir(f.path)
	if err != nil {
		return withCode(exitError, fmt.Errorf("nothing applied: %w", err))
	}
	cl, err := f.kube.connect()
	if err != nil {
		return withCode(exitError, err)
	}
	ns := f.namespace
	if ns == "" {
		ns = cl.namespace
	}
	spec, err := reconcile.Compile(config.App{Name: "apply", Namespace: ns, AppSpec: config.AppSpec{Manager: f.manager}})
	if err != nil {
		return withCode(exitError, err)
	}
	// The cluster's OpenAPI types custom kinds whose CRD is not in the
	// directory and says which of them serve status as a subresource; it
	// is fetched only for such kinds.
	schemas := planner.NewClusterSchemas(cl.discovery.OpenAPIV3WithContext(cmd.Context()))
	pl, err := planner.New(spec.Planner, planner.Options{Mapper: cl.mapper, Schemas: schemas})
	if err != nil {
		return withCode(exitError, err)
	}
	plan, err := pl.Plan(cmd.Context(), manifests)
	if err != nil {
		return withCode(exitError, fmt.Errorf("nothing applied: %w", err))
	}
	for _, w := range plan.Warnings {
		fmt.Fprintf(cmd.OutOrStdout(), "warning: %s\n", w)
	}
	md, err := applier.NewMetadataClient(cl.config)
	if err != nil {
		return withCode(exitError, err)
	}
	ap, err := applier.New(cl.dynamic, cl.mapper, applier.Options{Concurrency: f.concurrency, DryRun: f.dryRun, Metadata: md})
	if err != nil {
		return withCode(exitError, err)
	}
	progress := f.progress.reporter(cmd.ErrOrStderr(), f.verb())
	progress.Start("")
	cs, err := ap.Apply(cmd.Context(), plan, applier.ApplyOptions{Progress: progress.progress()})
	progress.Stop()
	if cs != nil {
		printChangeSet(cmd.OutOrStdout(), cs)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	return changeSetExit(cs)
}

// verb is what the progress lines say of the objects done.
func (f *applyFlags) verb() string {
	if f.dryRun {
		return "dry-run"
	}
	return "applied"
}

// changeSetExit maps a ChangeSet to the exit code contract: conflicts
// exit 3, other failures 1.
func changeSetExit(cs *applier.ChangeSet) error {
	if n := len(cs.Failures()); n > 0 {
		return withCode(exitError, fmt.Errorf("%d object(s) failed", n))
	}
	if n := len(cs.Conflicts()); n > 0 {
		return withCode(exitConflict, fmt.Errorf("%d object(s) not applied because of field conflicts; see above", n))
	}
	if n := len(cs.Unhealthy()); n > 0 {
		return withCode(exitError, fmt.Errorf("%d object(s) applied but not healthy when the wait ended; see above", n))
	}
	return nil
}

// printChangeSet writes one kubectl-like line per slice, the conflicting
// fields under their object, and a summary, through a buffer (a line a
// write was a write call per object).
func printChangeSet(out io.Writer, cs *applier.ChangeSet) {
	w := bufio.NewWriter(out)
	defer w.Flush()
	managers := map[planner.ObjectRef]int{}
	for _, c := range cs.Changes {
		managers[c.Object]++
	}
	suffix := ""
	if cs.DryRun {
		suffix = " (dry run)"
	}
	for _, c := range cs.Changes {
		line := fmt.Sprintf("%s %s%s", c.Object, c.Action, suffix)
		if managers[c.Object] > 1 {
			line += fmt.Sprintf(" [manager %s]", c.Manager)
		}
		fmt.Fprintln(w, line)
		res := c.Resolution()
		for _, conflict := range c.Conflicts {
			fmt.Fprintf(w, "  conflict: %s\n", conflict.Error())
		}
		for _, y := range res.Yielded {
			fmt.Fprintf(w, "  yielded: %s\n", y.Error())
		}
		for _, f := range res.Forced {
			fmt.Fprintf(w, "  forced: %s\n", f.Error())
		}
		for _, f := range res.SameValue {
			fmt.Fprintf(w, "  same value: %s; taken without changing the value\n", f.Error())
		}
		for _, f := range res.SameValueLeft {
			fmt.Fprintf(w, "  same value: %s; left to it, another app declares the same value\n", f.Error())
		}
		if len(c.Changed) > 0 {
			fmt.Fprintf(w, "  changed: %s\n", strings.Join(c.Changed, ", "))
		}
		if c.Health != "" {
			health := c.Health
			if c.HealthMessage != "" {
				health += ": " + c.HealthMessage
			}
			fmt.Fprintf(w, "  health: %s\n", health)
		}
		for _, o := range res.OtherInventory {
			fmt.Fprintf(w, "  shared: the object is in another app's inventory (%s); that app keeps the label and prunes the object\n", o.Error())
		}
		for _, p := range res.Held {
			fmt.Fprintf(w, "  handoff pending: %s left Git; held at its live value by %s until another manager owns it\n", p, ownership.HandoffManager(c.Manager))
		}
		for _, m := range c.Moved {
			fmt.Fprintf(w, "  moved: %s to %q, value unchanged\n", m, m.To)
		}
		for _, m := range res.Migrated {
			fmt.Fprintf(w, "  migrated: fields of manager %s moved to the current managers\n", m)
		}
		if res.Unchecked != "" {
			fmt.Fprintf(w, "  not checked: %s\n", res.Unchecked)
		}
		if c.Skip != nil {
			fmt.Fprintf(w, "  skipped: %s\n", c.Skip)
		}
		if c.Action == applier.Failed && c.Err != nil {
			fmt.Fprintf(w, "  error: %s\n", redact.Error(c.Err))
		}
	}
	if len(cs.Conflicts()) > 0 {
		fmt.Fprintln(w, "  hint: the conflict policy says fail for these fields (no rule forces or yields them), so their owner keeps them. Agree on one owner, drop the field from Git, or add a conflicts rule (force/yield) for that manager in syncd.yaml.")
	}
	var parts []string
	for _, a := range []applier.Action{applier.Created, applier.Configured, applier.Unchanged, applier.Yielded, applier.Forced, applier.HandoffPending, applier.Recreated, applier.Conflicted, applier.Failed, applier.Skipped, applier.Excluded} {
		if n := cs.Count(a); n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, a))
		}
	}
	if len(parts) > 0 {
		fmt.Fprintf(w, "%s%s\n", strings.Join(parts, ", "), suffix)
	}
}

// printPrune writes one line per object the prune deleted, orphaned,
// kept or spared, naming it as the change lines do (a guard's reason and
// message under a spared one, unless a refusal of the whole prune, said
// in the summary, is why), then the summary line.
func printPrune(w io.Writer, rep *inventory.Report) {
	suffix := ""
	if rep.DryRun {
		suffix = " (dry run)"
	}
	for _, ref := range rep.Deleted {
		fmt.Fprintf(w, "%s deleted%s\n", ref, suffix)
	}
	for _, ref := range rep.Orphaned {
		fmt.Fprintf(w, "%s orphaned%s\n", ref, suffix)
	}
	for _, k := range rep.Kept {
		fmt.Fprintf(w, "%s kept%s\n  left Git; prune disabled (%s): dropped from the inventory, kept in the cluster as it is\n", k.Object, suffix, k.Directive)
	}
	for _, sp := range rep.Spared {
		fmt.Fprintf(w, "%s spared (%s)\n", sp.Object, sp.Reason)
		if rep.Refused == nil {
			fmt.Fprintf(w, "  %s\n", redact.Text(sp.Message))
		}
	}
	fmt.Fprintln(w, rep.String())
}

// runApplyConfig runs source → planner → applier once for each app, in
// dependency order (config.DependencyOrder): an app whose dependency
// failed, or was itself not applied, is not applied and says why; the
// apps that do not depend on it still are. With --app only that app is
// applied, and its dependencies are not checked (the output says so).
func runApplyConfig(cmd *cobra.Command, f *applyFlags) error {
	if f.manager != "" || f.namespace != "" {
		return withCode(exitError, errors.New("--manager and --namespace come from the app in --config; drop them"))
	}
	renderer := applyRenderer(f.cacheDir)
	progress := f.progress.reporter(cmd.ErrOrStderr(), f.verb())
	open := configOpen{path: f.config, app: f.app, kube: &f.kube, inventory: &f.inventory, cacheDir: f.cacheDir, concurrency: f.concurrency, progress: progress.progress(), renderer: renderer}
	if renderer != nil {
		defer renderer.StopSpare()
		open.loaded = func(cfg *config.Config) { prestartUnkept(renderer, cfg, f.app, f.cacheDir) }
	}
	runner, apps, _, err := open.open(cmd.Context())
	if err != nil {
		return withCode(exitError, err)
	}
	if f.path != "" && len(apps) != 1 {
		return withCode(exitError, errors.New("--path renders one app: name it with --app"))
	}
	out := cmd.OutOrStdout()
	if f.app != "" && len(apps[0].DependsOn) > 0 {
		fmt.Fprintf(out, "note: app %s depends on %s; --app applies it alone, without checking that they applied their current revision\n", apps[0].Name, strings.Join(apps[0].DependsOn, ", "))
	}
	var worst error
	stopped := dependencyStops{}
	for _, app := range config.DependencyOrder(apps) {
		if reason, stop := stopped.reason(app); stop {
			stopped.skip(app)
			fmt.Fprintf(cmd.ErrOrStderr(), "error: app %s: not applied: %s\n", app.Name, reason)
			continue
		}
		progress.Start(app.Name)
		err := applyConfigApp(cmd, runner, app, f, progress)
		if err == nil {
			continue
		}
		stopped.fail(app)
		fmt.Fprintln(cmd.ErrOrStderr(), "error:", err)
		if worst == nil || exitCodeOf(err) == exitError {
			worst = err
		}
	}
	if worst != nil {
		return withCode(exitCodeOf(worst), nil)
	}
	return nil
}

// applyRenderer is the renderer of syncd apply --config: it keeps the
// answers of renders in the cache directory (renderproc.Renderer.
// KeepAnswers), so that the next run on a repository whose tree did not
// change reads them instead of rendering. nil when no renderer can be
// made (the Runner's default then reports why).
func applyRenderer(cacheDir string) *renderproc.Renderer {
	r, err := renderproc.New(renderproc.Limits{})
	if err != nil {
		return nil
	}
	r.KeepAnswers(rendersDir(cacheDir))
	return r
}

// prestartUnkept starts the child of the first render now (Prestart),
// so that its start overlaps connecting to the cluster and fetching the
// source, when one of the apps to apply (only, or all) will render:
// it renders something no kept answer stands for (rendersUnkept), or its
// source was never fetched into cacheDir, so nothing of it can be kept
// yet (a first run). For the other apps, a child started for nothing
// would slow the common run, the one on an unchanged tree, by about as
// much as it saves the rest. The caller's StopSpare kills a child no
// render used; a child that cannot start now is started again, and its
// error reported, when an app renders.
func prestartUnkept(r *renderproc.Renderer, cfg *config.Config, only, cacheDir string) {
	if willRender(cfg, only, cacheDir) {
		_ = r.Prestart()
	}
}

// willRender reports whether one of the apps to apply (only, or all)
// will render rather than read a kept answer, as far as the config and
// the cache directory tell: it renders something no kept answer stands
// for, or its source was never fetched.
func willRender(cfg *config.Config, only, cacheDir string) bool {
	for _, app := range cfg.Apps {
		if (only == "" || app.Name == only) && (rendersUnkept(cfg, app) || !sourceFetched(cacheDir, app.Source)) {
			return true
		}
	}
	return false
}

// sourceFetched reports whether source has a directory in cacheDir
// (empty: the default), as every fetched source does.
func sourceFetched(cacheDir, source string) bool {
	_, err := os.Stat(filepath.Join(cacheDirOr(cacheDir), source))
	return err == nil
}

// rendersUnkept reports whether app's render is one a kept answer never
// stands for, as far as its config tells (renderproc's answerCache): a
// chart (a helm section, or a Helm repository source), decryption, an
// OCI artifact. A Git directory that turns out to hold a chart is
// rendered all the same.
func rendersUnkept(cfg *config.Config, app config.App) bool {
	src, ok := cfg.Source(app.Source)
	return !ok || src.Kind() != config.SourceGit || app.Helm != nil || app.Decryption != nil
}

// rendersDir is where syncd apply --config and syncd run keep render
// answers: beside the sources in the cache directory (cacheDir; empty:
// the default), under a name no source can have.
func rendersDir(cacheDir string) string {
	return filepath.Join(cacheDirOr(cacheDir), "_renders")
}

// cacheDirOr is the cache directory --cache-dir names, or the default
// the Runner uses when it names none.
func cacheDirOr(cacheDir string) string {
	if cacheDir == "" {
		return reconcile.DefaultCacheDir()
	}
	return cacheDir
}

// applyConfigApp applies one app of --config and prints what happened; the
// error carries the exit code.
func applyConfigApp(cmd *cobra.Command, runner *reconcile.Runner, app config.App, f *applyFlags, progress *progressReporter) error {
	out := cmd.OutOrStdout()
	rendered, cs, err := runner.Apply(cmd.Context(), app, f.path, f.dryRun)
	progress.Stop()
	if rendered != nil {
		fmt.Fprintf(out, "app %s: revision %s\n", app.Name, rendered.Plan.Revision)
		for _, w := range rendered.Plan.Warnings {
			fmt.Fprintf(out, "  warning: %s\n", w)
		}
	}
	if cs != nil {
		printChangeSet(out, cs)
	}
	if rendered != nil && rendered.Prune != nil {
		printPrune(out, rendered.Prune)
	}
	if err == nil && cs != nil {
		err = changeSetExit(cs)
	}
	if err == nil {
		return nil
	}
	err = refusedExit(err)
	var ce *exitCodeError
	if !errors.As(err, &ce) {
		err = withCode(exitError, nothingMoreApplied(app.Name, err))
	}
	return err
}

// nothingMoreApplied says that the apply of app stopped at err, naming
// the app once: the runner's errors already begin "app NAME: ".
func nothingMoreApplied(app string, err error) error {
	if strings.HasPrefix(err.Error(), "app "+app+": ") {
		return fmt.Errorf("%w; nothing more applied", err)
	}
	return fmt.Errorf("app %s: %w; nothing more applied", app, err)
}

// dependencyStops records, for each app of a syncd apply --config run that
// was not applied in full, the app whose failure stopped it: itself when
// it failed, else the failed app its dependencies lead to.
type dependencyStops map[string]string

// fail records that app was applied and failed.
func (s dependencyStops) fail(app config.App) { s[app.Name] = app.Name }

// skip records that app was not applied because of a dependency; reason
// must have said so.
func (s dependencyStops) skip(app config.App) {
	for _, dep := range app.DependsOn {
		if cause, ok := s[dep]; ok {
			s[app.Name] = cause
			return
		}
	}
}

// reason says why app must not be applied, naming its first dependency
// that failed or was not applied; stop is false when none did.
func (s dependencyStops) reason(app config.App) (reason string, stop bool) {
	waits := depends.Waits(app.DependsOn, s.stopped)
	if len(waits) == 0 {
		return "", false
	}
	return waits[0], true
}

// stopped says why dependency dep stops its dependents: it failed, or it
// was not applied because another app failed; ok is false when it
// applied (or was not run).
func (s dependencyStops) stopped(dep string) (why string, ok bool) {
	cause, ok := s[dep]
	switch {
	case !ok:
		return "", false
	case cause == dep:
		return fmt.Sprintf("it depends on %s, which failed", dep), true
	default:
		return fmt.Sprintf("it depends on %s, which was not applied because %s failed", dep, cause), true
	}
}
