package main

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"net/url"
	"path"
	"path/filepath"
	"slices"
	"strings"

	"github.com/go-git/go-git/v5"
	"github.com/spf13/cobra"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/renderproc"
	"syncd.dev/syncd/internal/source"
)

type renderFlags struct {
	config   string
	app      string
	path     string
	output   string
	cacheDir string
}

func newRenderCommand() *cobra.Command {
	f := &renderFlags{}
	cmd := &cobra.Command{
		Use:   "render --config FILE --app NAME [--path DIR] [--cache-dir DIR] [-o yaml|json]",
		Short: "Print an app's per-manager apply configurations, without a cluster",
		Long: `render builds an app's manifests (a kustomization, a directory of
YAML/JSON files, or a Helm chart), checks them, and prints what syncd would
apply: for every object, one apply configuration per field manager, in
apply order. It does not contact the cluster: kinds' scopes and schemas
come from built-in knowledge and from CRDs in the same render, and a chart
sees Helm's default capabilities.

The manifests are read from --path. Without --path:
  - an app whose source is a local file:// repository is rendered from that
    repository's working tree (app.path inside it);
  - an app of a Helm repository source (sources[].helm, https:// or oci://)
    or of an OCI source (sources[].oci) is fetched through its source, as
    syncd apply --config fetches it: the chart version or tag the app's
    range picks, with the source's credentials, into --cache-dir (a second
    render with the same cache downloads nothing that did not move);
  - other Git sources need --path DIR with a checkout of the repository.
Only the fetch uses the network; the render itself reads the fetched tree
and nothing else.

-o yaml (default) prints one YAML document per slice, each preceded by
"# manager: NAME  object: REF"; warnings follow as "# warning:" comments.
-o json prints one JSON document {app, revision, slices: [{manager, object,
stage, origin, hash, fields, applyConfiguration}], warnings}. Secret values,
and the values of fields the app marks sensitive (apps[].sensitive), are
redacted in both.

Exit codes: 0 rendered, 1 error (nothing is printed for an invalid render
or a failed fetch).`,
		Args: cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error { return runRender(cmd, f) },
	}
	fs := cmd.Flags()
	fs.StringVar(&f.config, "config", "", "syncd config file (required)")
	fs.StringVar(&f.app, "app", "", "name of the app to render (required)")
	fs.StringVar(&f.path, "path", "", "directory holding the app's manifests or chart (default: the app's file:// source, or its Helm repository or OCI source, fetched)")
	fs.StringVar(&f.cacheDir, "cache-dir", "", "where fetched Helm repository and OCI sources are cached (default ~/.cache/syncd/sources)")
	fs.StringVarP(&f.output, "output", "o", "yaml", "output format: yaml or json")
	return cmd
}

func runRender(cmd *cobra.Command, f *renderFlags) error {
	if err := f.check(); err != nil {
		return withCode(exitError, err)
	}
	cfg, err := config.Load(f.config)
	if err != nil {
		return withCode(exitError, err)
	}
	app, ok := findApp(cfg, f.app)
	if !ok {
		return withCode(exitError, fmt.Errorf("%s: no app named %q", f.config, f.app))
	}
	in, err := renderInputOf(cmd.Context(), cfg, app, f)
	if err != nil {
		return withCode(exitError, err)
	}
	defer in.release()
	plan, err := renderPlan(cmd.Context(), app, in)
	if err != nil {
		return withCode(exitError, err)
	}
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

// check refuses missing and bad flags.
func (f *renderFlags) check() error {
	switch {
	case f.config == "":
		return errors.New("--config is required: the syncd config file naming the app")
	case f.app == "":
		return errors.New("--app is required: the name of the app to render")
	case f.output != "yaml" && f.output != "json":
		return fmt.Errorf("-o %q: use yaml or json", f.output)
	}
	return nil
}

// renderInput is what syncd render reads: the tree, the revision label
// the plan carries, what errors call it, and the hold on a fetched
// revision's tree (release).
type renderInput struct {
	tree    planner.Tree
	label   string
	what    string
	release func()
}

// renderInputOf decides where the app's manifests are read from: --path,
// a file:// source's working tree, or its Helm repository or OCI source,
// fetched (an app with helm.valuesSource always: its chart comes from its
// source, --path standing in for the values source).
func renderInputOf(ctx context.Context, cfg *config.Config, app config.App, f *renderFlags) (renderInput, error) {
	valuesSource := app.Helm != nil && app.Helm.ValuesSource != ""
	if f.path != "" && !valuesSource {
		if err := pathInBareRepository(app, f.path); err != nil {
			return renderInput{}, err
		}
		return localRenderInput(app, f.path, func(rel string) string {
			return "use --path " + filepath.Join(f.path, filepath.FromSlash(rel))
		})
	}
	src, ok := cfg.Source(app.Source)
	if !ok {
		return renderInput{}, fmt.Errorf("app %s: source %q is not defined", app.Name, app.Source)
	}
	if k := src.Kind(); k == config.SourceHelm || k == config.SourceOCI || valuesSource {
		return fetchRenderInput(ctx, cfg, app, f)
	}
	dir, err := localSourceDir(src, app)
	if err != nil {
		return renderInput{}, err
	}
	return localRenderInput(app, dir, func(rel string) string {
		return "set apps[" + app.Name + "].path to " + path.Join(app.TreePath(), rel)
	})
}

// localRenderInput is the tree of a local directory. A directory that is
// neither a chart nor a kustomization but has charts below it (a
// repository's root, as helm users pass it) is refused, naming each chart
// and what to write instead (suggest).
func localRenderInput(app config.App, dir string, suggest func(rel string) string) (renderInput, error) {
	tree, err := planner.LocalTree(dir)
	if err != nil {
		return renderInput{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	if !planner.IsChart(tree.Dir) && !planner.IsKustomization(tree.Dir) {
		if charts := chartsBelow(tree.Dir); len(charts) > 0 {
			return renderInput{}, chartsBelowError(app, dir, charts, suggest)
		}
	}
	if tree.Helm, err = reconcile.HelmOptionsAt(app, source.Revision{}, tree.Dir); err != nil {
		return renderInput{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	return renderInput{tree: tree, label: "working tree", what: dir, release: func() {}}, nil
}

// fetchRenderInput polls the app's source through a Runner without a
// cluster, as syncd apply --config polls it (Runner.FetchTree), and holds
// the revision's tree.
func fetchRenderInput(ctx context.Context, cfg *config.Config, app config.App, f *renderFlags) (renderInput, error) {
	runner, err := reconcile.New(cfg, reconcile.Cluster{}, reconcile.Options{CacheDir: f.cacheDir})
	if err != nil {
		return renderInput{}, err
	}
	tree, label, release, err := runner.FetchTree(ctx, app, f.path)
	if err != nil {
		return renderInput{}, err
	}
	return renderInput{tree: tree, label: label, what: "source " + app.Source + " at " + label, release: release}, nil
}

// renderPlan renders the input offline (a chart sees Helm's default
// capabilities: in.tree's Helm options have none) and plans it,
// redacted.
func renderPlan(ctx context.Context, app config.App, in renderInput) (*planner.Plan, error) {
	tree, err := reconcile.WithDecryption(app, in.tree)
	if err != nil {
		return nil, err
	}
	renderer, err := renderproc.Default()
	if err != nil {
		return nil, err
	}
	manifests, err := renderer.Render(ctx, tree)
	if err != nil {
		return nil, fmt.Errorf("app %s: %s: nothing rendered:\n%w", app.Name, in.what, err)
	}
	subst, err := reconcile.OfflineSubstitution(ctx, app)
	if err != nil {
		return nil, err
	}
	spec, err := reconcile.Compile(app)
	if err != nil {
		return nil, err
	}
	pl, err := planner.New(spec.Planner, planner.Options{Revision: in.label, Substitution: subst, Chart: tree.ChartRelease()})
	if err != nil {
		return nil, err
	}
	plan, err := pl.Plan(ctx, manifests)
	if err != nil {
		return nil, fmt.Errorf("app %s: nothing rendered:\n%w", app.Name, err)
	}
	plan.Warnings = append(planner.KustomizeWarnings(tree), plan.Warnings...)
	plan.Redact(spec.Sensitive)
	return plan, nil
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
// is a file:// URL; another Git source needs --path.
func localSourceDir(src config.Source, app config.App) (string, error) {
	u, err := url.Parse(src.URL())
	if err != nil || u.Scheme != "file" {
		return "", fmt.Errorf("app %s: source %s is %s, not a local file:// repository: pass --path DIR with a checkout of it (render fetches Helm repository and OCI sources, not Git repositories)", app.Name, src.Name, src.URL())
	}
	dir := filepath.Join(filepath.FromSlash(u.Path), filepath.FromSlash(app.TreePath()))
	if repo, rel, ok := bareRepositoryAt(filepath.FromSlash(u.Path)); ok && rel == "." {
		return "", fmt.Errorf("app %s: source %s is the bare repository %s, which has no working tree to render: pass --path DIR with a checkout of it (git clone %s DIR, then --path %s), or preview it with syncd plan, which fetches it", app.Name, src.Name, repo, repo, cloneDir(app.TreePath()))
	}
	if repo, rel, ok := bareRepositoryAt(dir); ok {
		return "", fmt.Errorf("app %s: source %s reads %s, inside the bare repository %s, whose files are in its Git objects, not on disk: clone it (git clone %s DIR) and pass --path %s; to fetch it (syncd plan, apply), set the source's url to file://%s and the app's path to %s", app.Name, src.Name, dir, repo, repo, cloneDir(rel), filepath.ToSlash(repo), rel)
	}
	return dir, nil
}

// pathInBareRepository refuses a --path that is, or is inside, a bare
// repository (a file:// URL of one too): its files are not on disk.
func pathInBareRepository(app config.App, dir string) error {
	if u, err := url.Parse(dir); err == nil && u.Scheme == "file" {
		dir = filepath.FromSlash(u.Path)
	}
	repo, rel, ok := bareRepositoryAt(dir)
	if !ok {
		return nil
	}
	where := "is in"
	if rel == "." {
		where = "is"
	}
	return fmt.Errorf("app %s: --path %s %s the bare repository %s, whose files are in its Git objects, not on disk, so there is no directory to render: clone it (git clone %s DIR) and pass --path %s", app.Name, dir, where, repo, repo, cloneDir(rel))
}

// cloneDir is the --path of the directory rel (slash-separated, "." or
// "" for the root) in a clone DIR.
func cloneDir(rel string) string {
	if rel == "" || rel == "." {
		return "DIR"
	}
	return "DIR/" + rel
}

// bareRepositoryAt finds the bare repository that dir is, or is inside
// (dir need not exist): the repository's directory and dir relative to
// it, slash-separated ("." for the repository itself).
func bareRepositoryAt(dir string) (repo, rel string, ok bool) {
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", "", false
	}
	for p := abs; ; p = filepath.Dir(p) {
		if isBareRepository(p) {
			rel, err := filepath.Rel(p, abs)
			return p, filepath.ToSlash(rel), err == nil
		}
		if filepath.Dir(p) == p {
			return "", "", false
		}
	}
}

// isBareRepository reports whether dir is a Git repository without a
// working tree (git clone --bare, a server's repository): its files are
// in its objects, not in dir.
func isBareRepository(dir string) bool {
	repo, err := git.PlainOpen(dir)
	if err != nil {
		return false
	}
	_, err = repo.Worktree()
	return errors.Is(err, git.ErrIsBareRepository)
}

// chartsBelowDepth is how many directory levels chartsBelow looks down
// (charts/<name> is 2, deploy/charts/<name> 3).
const chartsBelowDepth = 4

// chartsBelow lists the chart directories below dir (slash-separated,
// relative, sorted): those holding a Chart.yaml, at most chartsBelowDepth
// levels down, not looking inside a chart (its subcharts) or a
// dot-directory (.git).
func chartsBelow(dir string) []string {
	var out []string
	_ = filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() || p == dir {
			return nil
		}
		rel, _ := filepath.Rel(dir, p)
		rel = filepath.ToSlash(rel)
		switch {
		case strings.HasPrefix(d.Name(), "."):
			return fs.SkipDir
		case planner.IsChart(p):
			out = append(out, rel)
			return fs.SkipDir
		case strings.Count(rel, "/")+1 >= chartsBelowDepth:
			return fs.SkipDir
		}
		return nil
	})
	slices.Sort(out)
	return out
}

// chartsBelowError says that dir is not a chart while charts are below
// it, with what to write for each (suggest).
func chartsBelowError(app config.App, dir string, charts []string, suggest func(rel string) string) error {
	var b strings.Builder
	fmt.Fprintf(&b, "app %s: %s holds no %s: it is not a chart, and the charts below it are not read as manifests; render one chart per app:", app.Name, dir, planner.ChartFile)
	for _, rel := range charts {
		fmt.Fprintf(&b, "\n  %s holds a %s: %s", rel, planner.ChartFile, suggest(rel))
	}
	return errors.New(b.String())
}
