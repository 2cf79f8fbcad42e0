package main

import (
	"context"
	"errors"
	"fmt"

	"github.com/spf13/cobra"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/redact"
)

type driftFlags struct {
	// objectFlags are the cluster and, without --config, the namespace
	// of the App objects.
	objectFlags
	config   string
	app      string
	path     string
	cacheDir string
	output   string
	// showIgnored lists the findings ignore rules set aside.
	showIgnored bool
	// allNamespaces checks the App objects of every namespace.
	allNamespaces bool
}

func newDriftCommand() *cobra.Command {
	f := &driftFlags{}
	cmd := &cobra.Command{
		Use:   "drift (--config FILE [--app NAME] | [--app NAME] [-n NS | -A]) [--path DIR] [-o text|json|markdown]",
		Short: "Report fields syncd declared that another manager took or changed: who, how, when, live vs desired",
		Long: `drift renders each app (or --app) as apply would, reads the live objects
and compares, field by field, what the app's managers declared with the live
managedFields and values, as the API server stores them: a field whose live
value is not Git's text is compared with what a dry-run apply of the app's
fields returns, so zero values the server omits, defaults and normal forms
(1000m = 1) are not drift. Each finding names the field in the API server's
notation, its class (taken-over, shared, value-drift, deleted, unmanaged;
yielded and handoff-pending are information), the current owners with their
operation, subresource and time, and the desired and live values. A field
another manager took that the app's conflict policy yields to it is
yielded, not drift. A field an ignore rule of the app (apps[].ignore)
matches is not drift either; --show-ignored lists those, marked ignored.
Secret values and fields the app marks sensitive are always redacted.
Nothing is written, also for apps in drift mode detect. An app with
serviceAccountName is read as that account: an object it may not read is
a warning ("not readable by system:serviceaccount:..."), with no finding
and none of its values (docs/security.md#tenants).

The apps are those of a config file (--config FILE, every app or --app
NAME), or App objects (docs/apps.md): without --config, the App --app
NAME of -n NS, or every App of -n NS, or with -A of every namespace
(default namespace: the kubeconfig context's). An App is translated as
the controller translates it, with its GitSource and the Secrets they
name; Apps of other sources are skipped with a warning (name one with
--app for an error), check them with --config.

Exit codes: 0 no drift, 2 drift found, 1 error.`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runDrift(cmd, f) },
	}
	fs := cmd.Flags()
	f.kube.register(fs)
	fs.StringVar(&f.config, "config", "", "syncd.yaml whose apps to check (default: App objects)")
	fs.StringVar(&f.app, "app", "", "only this app: an app of --config, or without --config an App of -n (default: every app)")
	_ = cmd.RegisterFlagCompletionFunc("app", completeConfigApp(&f.config, func() *objectFlags { return &f.objectFlags }))
	fs.StringVarP(&f.namespace, "namespace", "n", "", "without --config: namespace of the App objects (default: the kubeconfig context's)")
	_ = cmd.RegisterFlagCompletionFunc("namespace", completeNamespaces(&f.objectFlags))
	fs.BoolVarP(&f.allNamespaces, "all-namespaces", "A", false, "without --config: check the App objects of every namespace")
	fs.StringVar(&f.path, "path", "", "render the app from this directory instead of its source (one app: name it with --app)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where Git sources are cached (default ~/.cache/syncd/sources)")
	fs.StringVarP(&f.output, "output", "o", "text", "output format: text, json or markdown")
	fs.BoolVar(&f.showIgnored, "show-ignored", false, "also list the differences the apps' ignore rules set aside, marked ignored (text, json and markdown)")
	return cmd
}

func runDrift(cmd *cobra.Command, f *driftFlags) error {
	if err := checkDriftFlags(f); err != nil {
		return withCode(exitError, err)
	}
	var all *drift.Report
	var unchecked int
	var err error
	if f.config != "" {
		all, err = driftConfig(cmd.Context(), f)
	} else {
		all, unchecked, err = driftObjects(cmd.Context(), f)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	out := cmd.OutOrStdout()
	switch f.output {
	case "json":
		err = all.WriteJSON(out)
	case "markdown":
		err = all.WriteMarkdown(out)
	default:
		err = all.WriteText(out)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	if unchecked > 0 {
		return withCode(exitError, fmt.Errorf("%d App(s) could not be checked; the report's warnings say why", unchecked))
	}
	if all.HasDrift() {
		return withCode(exitChanges, nil)
	}
	return nil
}

// checkDriftFlags says what is contradictory in the flags.
func checkDriftFlags(f *driftFlags) error {
	switch {
	case f.output != "text" && f.output != "json" && f.output != "markdown":
		return fmt.Errorf("-o %q: use text, json or markdown", f.output)
	case f.config != "" && (f.namespace != "" || f.allNamespaces):
		return errors.New("-n and -A choose App objects; the apps of --config are named by --app")
	case f.allNamespaces && f.namespace != "":
		return errors.New("-A and -n both given: check every namespace (-A) or one (-n)")
	case f.allNamespaces && f.app != "":
		return errors.New("--app names one App of -n; drop -A")
	case f.config == "" && f.path != "" && f.app == "":
		return errors.New("--path renders one app: name it with --app")
	}
	return nil
}

// driftConfig checks the apps of --config (or its --app).
func driftConfig(ctx context.Context, f *driftFlags) (*drift.Report, error) {
	runner, apps, _, err := openConfig(ctx, f.config, f.app, &f.kube, nil, f.cacheDir, 0)
	if err != nil {
		return nil, err
	}
	if f.path != "" && len(apps) != 1 {
		return nil, errors.New("--path renders one app: name it with --app")
	}
	all := &drift.Report{}
	for _, app := range apps {
		rep, err := runner.DetectDrift(ctx, app, f.path)
		if err != nil {
			return nil, err
		}
		f.add(all, rep)
	}
	return all, nil
}

// add adds one app's report to all.
func (f *driftFlags) add(all, rep *drift.Report) {
	all.Findings = append(all.Findings, rep.Findings...)
	if f.showIgnored {
		all.Ignored = append(all.Ignored, rep.Ignored...)
	}
	all.Warnings = append(all.Warnings, rep.Warnings...)
}

// driftObjects checks App objects: --app of -n, or every App of -n (of
// every namespace with -A), each translated as the controller does. An
// App of a listing that cannot be checked (its GitSource is missing, its
// render fails) does not stop the others: it is a warning of the report,
// counted in unchecked; an App of another kind of source is a warning
// only. The App --app names fails the command instead.
func driftObjects(ctx context.Context, f *driftFlags) (all *drift.Report, unchecked int, err error) {
	cl, err := f.kube.connect()
	if err != nil {
		return nil, 0, err
	}
	ac, err := appsOn(cl, f.namespace)
	if err != nil {
		return nil, 0, err
	}
	apps, err := f.appObjects(ctx, ac)
	if err != nil {
		return nil, 0, err
	}
	all = &drift.Report{}
	for _, app := range apps {
		rep, err := f.driftObject(ctx, ac, app)
		var skip *skippedApp
		switch {
		case errors.As(err, &skip):
			all.Warnings = append(all.Warnings, redact.Error(skip))
		case err != nil && f.app != "":
			return nil, 0, err
		case err != nil:
			unchecked++
			all.Warnings = append(all.Warnings, fmt.Sprintf("App %s/%s: not checked: %s", app.Namespace, app.Name, redact.Error(err)))
		default:
			f.add(all, rep)
		}
	}
	return all, unchecked, nil
}

// appObjects reads the App --app names, or lists the Apps of the
// namespace (every namespace with -A).
func (f *driftFlags) appObjects(ctx context.Context, ac *appCluster) ([]*v1alpha1.App, error) {
	if f.app != "" {
		app, err := ac.getApp(ctx, ac.namespace, f.app)
		if err != nil {
			return nil, err
		}
		return []*v1alpha1.App{app}, nil
	}
	ns := ac.namespace
	if f.allNamespaces {
		ns = ""
	}
	list, err := ac.resource(v1alpha1.AppResource, ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		return nil, fmt.Errorf("list Apps: %w", err)
	}
	apps := make([]*v1alpha1.App, 0, len(list.Items))
	for i := range list.Items {
		app, err := decodeApp(&list.Items[i])
		if err != nil {
			return nil, err
		}
		apps = append(apps, app)
	}
	return apps, nil
}

// skippedApp is an App of a listing that drift does not check: its
// source is not a GitSource. A named App (--app) is an error instead.
type skippedApp struct{ err error }

func (s *skippedApp) Error() string { return s.err.Error() + "; skipped" }

func (s *skippedApp) Unwrap() error { return s.err }

// driftObject checks one App, translated with its GitSource (or the
// --path checkout) as the controller translates it.
func (f *driftFlags) driftObject(ctx context.Context, ac *appCluster, app *v1alpha1.App) (*drift.Report, error) {
	var src *v1alpha1.GitSource
	if f.path == "" {
		var err error
		if src, err = ac.gitSourceOf(ctx, app, "drift without --config checks", "check"); err != nil {
			if f.app == "" && app.Spec.SourceRef.Kind != v1alpha1.KindGitSource {
				return nil, &skippedApp{err: err}
			}
			return nil, err
		}
	}
	target, err := objectTarget(ctx, ac.cluster, app, src, f.path)
	if err != nil {
		return nil, err
	}
	defer target.cleanup()
	runner, err := configOpen{kube: &f.kube, cacheDir: f.cacheDir}.runner(ctx, target.cfg, ac.cluster)
	if err != nil {
		return nil, err
	}
	a, err := runner.App(target.app)
	if err != nil {
		return nil, err
	}
	return runner.DetectDrift(ctx, a, f.path)
}
