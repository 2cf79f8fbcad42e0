package main

import (
	"errors"
	"fmt"
	"net/url"
	"path/filepath"

	"github.com/spf13/cobra"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
)

type renderFlags struct {
	config string
	app    string
	path   string
	output string
}

func newRenderCommand() *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render --config FILE --app NAME [--path DIR] [-o yaml|json]",
		Short: "Print an app's per-manager apply configurations, offline",
		Long: `render builds an app's manifests (a kustomization, or a directory of
YAML/JSON files), checks them, and prints what syncd would apply: for every
object, one apply configuration per field manager, in apply order. It does
not contact the cluster: kinds' scopes and schemas come from built-in
knowledge and from CRDs in the same render.

The manifests are read from --path. Without --path, an app whose source is
a local file:// repository is rendered from that repository's working tree
(app.path inside it); other sources need --path until fetching is wired in.

-o yaml (default) prints one YAML document per slice, each preceded by
"# manager: NAME  object: REF"; warnings follow as "# warning:" comments.
-o json prints one JSON document {app, revision, slices: [{manager, object,
stage, origin, hash, fields, applyConfiguration}], warnings}. Secret values,
and the values of fields the app marks sensitive (apps[].sensitive), are
redacted in both.

Exit codes: 0 rendered, 1 error (nothing is printed for an invalid render).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRender(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.config, "config", "", "syncd config file (required)")
	fs.StringVar(&f.app, "app", "", "name of the app to render (required)")
	fs.StringVar(&f.path, "path", "", "directory holding the app's manifests (default: the app's file:// source)")
	fs.StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func runRender(cmd *cobra.Command, f *renderFlags) error {
	if f.config == "" {
		return withCode(exitError, errors.New("--config is required: the syncd config file naming the app"))
	}
	if f.app == "" {
		return withCode(exitError, errors.New("--app is required: the name of the app to render"))
	}
	if f.output != "yaml" && f.output != "json" {
		return withCode(exitError, fmt.Errorf("-o %q: use yaml or json", f.output))
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return withCode(exitError, err)
	}
	app, ok := findApp(cfg, f.app)
	if !ok {
		return withCode(exitError, fmt.Errorf("%s: no app named %q", f.config, f.app))
	}
	dir := f.path
	if dir == "" {
		if dir, err = localSourceDir(cfg, app); err != nil {
			return withCode(exitError, err)
		}
	}
	tree, err := planner.LocalTree(dir)
	if err != nil {
		return withCode(exitError, fmt.Errorf("app %s: %w", app.Name, err))
	}
	// No cluster: a chart sees Helm's default capabilities.
	if tree.Helm, err = reconcile.HelmOptions(app, tree.Dir); err != nil {
		return withCode(exitError, fmt.Errorf("app %s: %w", app.Name, err))
	}
	if tree, err = reconcile.WithDecryption(app, tree); err != nil {
		return withCode(exitError, err)
	}
	manifests, err := planner.Render(cmd.Context(), tree)
	if err != nil {
		return withCode(exitError, fmt.Errorf("app %s: %s: nothing rendered:\n%w", app.Name, dir, err))
	}
	subst, err := reconcile.OfflineSubstitution(cmd.Context(), app)
	if err != nil {
		return withCode(exitError, err)
	}
	spec, err := reconcile.Compile(app)
	if err != nil {
		return withCode(exitError, err)
	}
	pl, err := planner.New(spec.Planner, planner.Options{Revision: "working tree", Substitution: subst})
	if err != nil {
		return withCode(exitError, err)
	}
	plan, err := pl.Plan(cmd.Context(), manifests)
	if err != nil {
		return withCode(exitError, fmt.Errorf("app %s: nothing rendered:\n%w", app.Name, err))
	}
	plan.Redact(spec.Sensitive)
	out := cmd.OutOrStdout()
	if f.output == "json" {
		err = plan.WriteJSON(out)
	} else {
		err = plan.WriteYAML(out)
	}
	if err != nil {
		return withCode(exitError, err)
	}
	return nil
}

func findApp(cfg *config.Config, name string) (config.App, bool) {
	for _, a := range cfg.Apps {
		if a.Name == name {
			return a, true
		}
	}
	return config.App{}, false
}

// localSourceDir returns the app's directory in its source when the source
// is a file:// URL; any other source needs --path.
func localSourceDir(cfg *config.Config, app config.App) (string, error) {
	src, ok := cfg.Source(app.Source)
	if !ok {
		return "", fmt.Errorf("app %s: source %q is not defined", app.Name, app.Source)
	}
	u, err := url.Parse(src.URL())
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("app %s: source %s is %s, not a local file:// repository: pass --path DIR with a checkout of it (fetching is not wired into render yet)", app.Name, src.Name, src.URL())
	}
	return filepath.Join(filepath.FromSlash(u.Path), filepath.FromSlash(app.TreePath())), nil
}
