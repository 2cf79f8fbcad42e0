package reconcile

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/renderproc"
	"syncd.dev/syncd/internal/source"
)

// Cluster is what a run needs from one cluster identity.
type Cluster struct {
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// Config, when set, lets apps with serviceAccountName run as that
	// service account (impersonation); without it such apps fail. It is
	// also where the planner reads the schema of custom resources whose
	// CRD is not in the render (planner.ClusterSchemas).
	Config *rest.Config
}

// Options tune a Runner.
type Options struct {
	// CacheDir holds the sources' Git caches (default DefaultCacheDir()).
	CacheDir string
	// Concurrency bounds objects applied at once within a stage.
	Concurrency int
	// Inventory, when set, keeps each app's ApplySet inventory, skips
	// objects unchanged since syncd applied them, and prunes objects that
	// left Git. Nil: no inventory, no prune.
	Inventory *inventory.Manager
	// Reserved are syncd's own objects: the render of an app declaring
	// one is refused (inventory.ReservedErrors) before anything is sent.
	// Its InventoryNamespace defaults to Inventory's namespace.
	Reserved inventory.Reserved
	// Namespace is syncd's own namespace, where apps' substituteFrom
	// ConfigMaps and Secrets are read; empty: an app naming one fails.
	Namespace string
	// VariablesAsTenant reads substituteFrom's ConfigMaps and Secrets as
	// the app's identity (its serviceAccountName, package identity)
	// instead of syncd's. The App controller sets it: an App's team
	// writes its substituteFrom, and must not read through syncd a
	// Secret its service account may not. A file app's substituteFrom is
	// the operator's and is read as syncd (false).
	VariablesAsTenant bool
	// Targets makes the clients and inventories of apps with a cluster
	// section (remote clusters); nil: such apps fail, naming their
	// cluster. The caller closes it.
	Targets *Targets
	// Renderer renders each app's tree; nil: renderproc.Default (a child
	// process per render under the default limits, see package
	// renderproc).
	Renderer Renderer
	// Owner, when set, is whom the Runner's apps are: recorded in their
	// inventories, which refuse another owner's app of the same name
	// (inventory.App.Owner). The App controller sets "App
	// <namespace>/<name>"; the config file's apps leave it empty.
	Owner string
	// Progress, when set, is told how each apply and preview advances,
	// stage by stage (applier.Progress); the command line shows it on a
	// terminal. Nil tells no one.
	Progress applier.Progress
	// Once says the Runner applies each app once (syncd apply, syncd
	// run --once): it keeps no record of accepted dry runs, which only a
	// later apply of the same app by the same Runner reads (at 50,000
	// objects the record was 8.5 MB of a first sync's peak heap).
	Once bool
}

// Renderer renders an app's tree into its manifests, as planner.Render
// does (renderproc.Renderer: in a child process, under limits).
type Renderer interface {
	Render(ctx context.Context, t planner.Tree) ([]planner.Manifest, error)
}

var _ Renderer = (*renderproc.Renderer)(nil)

// DefaultCacheDir is $XDG_CACHE_HOME/syncd/sources (or ~/.cache/...).
func DefaultCacheDir() string {
	cache := os.Getenv("XDG_CACHE_HOME")
	if cache == "" {
		home, err := os.UserHomeDir()
		if err != nil {
			return filepath.Join(os.TempDir(), "syncd-sources")
		}
		cache = filepath.Join(home, ".cache")
	}
	return filepath.Join(cache, "syncd", "sources")
}

// Runner runs apps of one config against one cluster.
type Runner struct {
	cfg     *config.Config
	cluster Cluster
	opts    Options
	sources map[string]Tracker
	// specs are the config's apps compiled for the stages (compileApps).
	specs map[string]compiled
	// local is syncd's own cluster, the target of apps without a cluster
	// section (target.go).
	local *Target

	mu sync.Mutex
	// flaps are the apps' flap detectors (SetFlapping).
	flaps map[string]*drift.FlapDetector
	// remote is the target each remote app's last render resolved.
	remote map[string]*Target
	// accepted are the apps' records of accepted validation dry runs
	// (acceptedFor).
	accepted map[dryRunsOf]*applier.Accepted
}

// dryRunsOf is whose dry runs an applier.Accepted record holds: one app's,
// under one identity, on one cluster. The API server's answer to another
// identity or on another cluster says nothing of these.
type dryRunsOf struct {
	app     string
	tenant  identity.Tenant
	cluster string
}

// acceptedFor returns the record of accepted dry runs of app a on target,
// made on first use and kept for the Runner's life, so that an apply after
// a refused stage dry-runs only what changed and what was refused.
func (r *Runner) acceptedFor(a *App, target *Target) *applier.Accepted {
	k := dryRunsOf{app: a.Config.Name, tenant: a.Tenant, cluster: target.Name}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.accepted == nil {
		r.accepted = map[dryRunsOf]*applier.Accepted{}
	}
	if r.accepted[k] == nil {
		r.accepted[k] = applier.NewAccepted()
	}
	return r.accepted[k]
}

// SetFlapping makes the app's applies stop forcing the fields det finds
// flapping (ping-pong with another forcing writer), and its drift
// watcher feed det.
func (r *Runner) SetFlapping(app string, det *drift.FlapDetector) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.flaps == nil {
		r.flaps = map[string]*drift.FlapDetector{}
	}
	r.flaps[app] = det
}

// absCacheDir returns the cache directory as an absolute path (default
// DefaultCacheDir()): a checkout's path is handed to the render child,
// which runs in "/", so a relative --cache-dir would name another place
// there.
func absCacheDir(dir string) (string, error) {
	if dir == "" {
		return DefaultCacheDir(), nil
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return "", fmt.Errorf("cache directory %s: %w", dir, err)
	}
	return abs, nil
}

// New builds a Runner and a Source for every source of the config. A
// Git source whose file URL points inside opts.CacheDir, where the
// clones are, is refused (config.CheckLocalSources).
func New(cfg *config.Config, cluster Cluster, opts Options) (*Runner, error) {
	cacheDir, err := absCacheDir(opts.CacheDir)
	if err != nil {
		return nil, err
	}
	opts.CacheDir = cacheDir
	if err := cfg.CheckLocalSources(opts.CacheDir); err != nil {
		return nil, err
	}
	if opts.Renderer == nil {
		def, err := renderproc.Default()
		if err != nil {
			return nil, err
		}
		opts.Renderer = def
	}
	r := &Runner{cfg: cfg, cluster: cluster, opts: opts, sources: map[string]Tracker{}, specs: compileApps(cfg.Apps, opts.Owner), remote: map[string]*Target{}}
	local, err := newTarget(config.LocalCluster, cluster, opts.Inventory)
	if err != nil {
		return nil, err
	}
	r.local = local
	if err := r.addSources(cfg); err != nil {
		return nil, err
	}
	return r, nil
}

// addSources builds the tracker of every source of the config: a
// source.Source for Git, a source.HelmRepo (all in one set, through which
// charts' remote dependencies are fetched) for Helm repositories.
func (r *Runner) addSources(cfg *config.Config) error {
	helm, err := source.NewHelmRepos(source.Options{CacheDir: r.opts.CacheDir})
	if err != nil {
		return err
	}
	for _, sc := range cfg.Sources {
		var t Tracker
		if sc.Kind() == config.SourceHelm {
			t, err = helm.Add(HelmSourceSpec(sc, cfg.Apps))
		} else {
			t, err = source.New(SourceSpec(sc), source.Options{CacheDir: r.opts.CacheDir})
		}
		if err != nil {
			return err
		}
		r.sources[sc.Name] = t
	}
	return nil
}

// App returns the app named name.
func (r *Runner) App(name string) (config.App, error) {
	for _, a := range r.cfg.Apps {
		if a.Name == name {
			return a, nil
		}
	}
	return config.App{}, fmt.Errorf("%s: no app named %q", r.cfg.File, name)
}

// Tracker is what the Runner and the drivers use of a source:
// *source.Source (Git) and *source.HelmRepo (Helm repository) are ones.
type Tracker interface {
	Name() string
	Poll(ctx context.Context) (source.Revision, source.Result, error)
	Last() (source.Revision, bool)
	Hold(rev source.Revision) (release func(), err error)
	Job() source.Job
	Descends(ctx context.Context, newSHA, oldSHA string) (source.Ancestry, error)
}

var (
	_ Tracker = (*source.Source)(nil)
	_ Tracker = (*source.HelmRepo)(nil)
)

// Source returns the source named name (nil when there is none).
func (r *Runner) Source(name string) Tracker {
	if t, ok := r.sources[name]; ok {
		return t
	}
	return nil
}

// Rendered is the outcome of rendering one app.
type Rendered struct {
	Revision source.Revision // zero when rendered from a local directory
	Plan     *planner.Plan
	// Prune reports what the prune after the apply did (nil without an
	// inventory or when the apply never started).
	Prune *inventory.Report
	// Rewind is set when the revision does not descend from the one the
	// inventory records as last applied and pruned.
	Rewind *Rewind
}

// Render resolves the app's revision (polling its source) unless dir is
// given, then renders and plans it. Nothing is sent to the cluster except
// discovery.
//
// For an app with helm.valuesSource, dir is a checkout of the values
// source (a pull request of the values repository) and the chart still
// comes from the app's source, which is polled.
func (r *Runner) Render(ctx context.Context, app config.App, dir string) (*Rendered, error) {
	if dir != "" && ValuesSource(app) == "" {
		a, err := r.Spec(app)
		if err != nil {
			return nil, err
		}
		return r.renderDir(ctx, a, dir, source.Revision{}, "local:"+dir)
	}
	rev, release, err := r.pollApp(ctx, app, dir)
	if err != nil {
		return nil, err
	}
	defer release()
	return r.RenderAt(ctx, app, rev)
}

// Poll polls the app's source (and its helm.valuesSource) and holds the
// revision's trees until release is called: the App controller's driver
// polls on each reconcile. A failure is recorded as the inventory's
// refusal to prune (nothing is pruned while the source fails).
func (r *Runner) Poll(ctx context.Context, app config.App) (source.Revision, func(), error) {
	rev, release, err := r.pollApp(ctx, app, "")
	if err != nil && r.opts.Inventory != nil {
		r.opts.Inventory.Refuse(app.Name, RefusalOf(err), err)
	}
	return rev, release, err
}

// pollApp polls the app's source, and its values source (helm.
// valuesSource, or dir's checkout in its place), and holds their trees
// until release is called: another poll may move them on meanwhile.
func (r *Runner) pollApp(ctx context.Context, app config.App, dir string) (source.Revision, func(), error) {
	src := r.sources[app.Source]
	if src == nil {
		return source.Revision{}, nil, fmt.Errorf("app %s: source %q is not defined", app.Name, app.Source)
	}
	rev, _, err := src.Poll(ctx)
	if err != nil {
		return source.Revision{}, nil, fmt.Errorf("app %s: %w", app.Name, err)
	}
	release, err := src.Hold(rev)
	if err != nil {
		return source.Revision{}, nil, fmt.Errorf("app %s: %w", app.Name, err)
	}
	if ValuesSource(app) == "" {
		return rev, release, nil
	}
	joined, releaseValues, err := r.pollValues(ctx, app, rev, dir)
	if err != nil {
		release()
		return source.Revision{}, nil, err
	}
	return joined, func() { releaseValues(); release() }, nil
}

// RenderAt renders and plans the app at a revision its source already
// resolved (the drivers poll the sources). The caller holds
// the revision's tree (source.Source.Hold) until RenderAt returns.
func (r *Runner) RenderAt(ctx context.Context, app config.App, rev source.Revision) (*Rendered, error) {
	a, err := r.Spec(app)
	if err != nil {
		return nil, err
	}
	return r.renderAt(ctx, a, rev)
}

// renderAt renders and plans a compiled app at a revision its source
// resolved (RenderAt).
func (r *Runner) renderAt(ctx context.Context, a *App, rev source.Revision) (*Rendered, error) {
	dir, label, err := appDirAt(a.Config, rev)
	if err != nil {
		return nil, err
	}
	return r.renderDir(ctx, a, dir, rev, label)
}

// FetchTree polls the app's source (and its helm.valuesSource, dir
// standing in for it as in Render) and holds the trees until release is
// called, as Render does, and returns the tree the app renders at that
// revision with its Helm options set (HelmOptionsAt: no capabilities,
// nothing asked of a cluster) and the revision label its plan carries.
// syncd render renders it offline.
func (r *Runner) FetchTree(ctx context.Context, app config.App, dir string) (tree planner.Tree, label string, release func(), err error) {
	rev, release, err := r.pollApp(ctx, app, dir)
	if err != nil {
		return planner.Tree{}, "", nil, err
	}
	if tree, label, err = appTreeAt(app, rev); err != nil {
		release()
		return planner.Tree{}, "", nil, err
	}
	return tree, label, release, nil
}

// appTreeAt is the tree the app renders at rev, its Helm options set
// (HelmOptionsAt), and its plan's revision label.
func appTreeAt(app config.App, rev source.Revision) (planner.Tree, string, error) {
	dir, label, err := appDirAt(app, rev)
	if err != nil {
		return planner.Tree{}, "", err
	}
	tree, err := renderTree(dir, rev)
	if err == nil {
		tree.Helm, err = HelmOptionsAt(app, rev, tree.Dir)
	}
	if err != nil {
		return planner.Tree{}, "", fmt.Errorf("app %s: render %s: %w", app.Name, renderWhat(app), err)
	}
	return tree, label, nil
}

// appDirAt is the directory the app renders at rev, and its plan's
// revision label: the chart a Helm repository source resolved for it
// (chartDirAt), else its path in the revision's tree (tag@sha, or sha).
// An app whose values source resolved nothing yet is refused.
func appDirAt(app config.App, rev source.Revision) (dir, label string, err error) {
	if err := checkValuesResolved(app, rev); err != nil {
		return "", "", err
	}
	if ref, ok := ChartRefOf(app); ok {
		return chartDirAt(app, rev, ref)
	}
	if dir, err = rev.AppDir(app.Name, app.TreePath()); err != nil {
		return "", "", err
	}
	label = rev.SHA
	if rev.Tag != "" {
		label = rev.Tag + "@" + rev.SHA
	}
	return dir, label, nil
}

func (r *Runner) renderDir(ctx context.Context, spec *App, dir string, rev source.Revision, label string) (*Rendered, error) {
	app := spec.Config
	out := &Rendered{Revision: rev}
	tree, err := renderTree(dir, rev)
	if err != nil {
		return nil, fmt.Errorf("app %s: render %s: %w", app.Name, renderWhat(app), err)
	}
	target, err := r.resolveTarget(ctx, app, tree)
	if err != nil {
		return nil, err
	}
	if tree.Helm, err = r.helmOptions(ctx, target, app, rev, tree.Dir); err != nil {
		return nil, fmt.Errorf("app %s: render %s: %w", app.Name, renderWhat(app), err)
	}
	if tree, err = WithDecryption(app, tree); err != nil {
		return nil, err
	}
	manifests, err := r.opts.Renderer.Render(ctx, tree)
	if err != nil {
		return nil, fmt.Errorf("app %s: render %s: %w", app.Name, renderWhat(app), err)
	}
	subst, err := r.substitution(ctx, app)
	if err != nil {
		return nil, err
	}
	pl, err := planner.New(spec.Planner, planner.Options{Revision: label, Mapper: target.Cluster.Mapper, Schemas: target.schemas, Substitution: subst, Chart: tree.ChartRelease()})
	if err != nil {
		return nil, err
	}
	plan, err := pl.Plan(ctx, manifests)
	if err != nil {
		return nil, fmt.Errorf("app %s: %w", app.Name, err)
	}
	plan.Warnings = append(planner.KustomizeWarnings(tree), plan.Warnings...)
	if err := r.reserved(target).Refuse(spec.Inventory, plan); err != nil {
		return nil, fmt.Errorf("app %s: %w", app.Name, err)
	}
	out.Plan = plan
	return out, nil
}

// reserved returns syncd's own objects, the inventory namespace filled in
// from the target's inventory when not given (a remote cluster's
// inventory namespace is always its own).
func (r *Runner) reserved(t *Target) inventory.Reserved {
	res := r.opts.Reserved
	if t.Inventory != nil && (res.InventoryNamespace == "" || t != r.local) {
		res.InventoryNamespace = t.Inventory.Namespace()
	}
	return res
}

// renderTree is what a render of dir may read: the revision's checkout
// for a Git source, the enclosing repository of a local directory (a
// --path run, rev is zero).
func renderTree(dir string, rev source.Revision) (planner.Tree, error) {
	if rev.Dir == "" {
		return planner.LocalTree(dir)
	}
	if rev.Helm != nil {
		// A chart of a Helm repository: its tree is the chart's archive,
		// expanded (see source.ChartRevision).
		return planner.Tree{Root: filepath.Dir(dir), Dir: dir}, nil
	}
	return planner.Tree{Root: rev.Dir, Dir: dir, Content: rev.Tree}, nil
}

// ApplyOptions returns the applier settings an app's config asks for.
func ApplyOptions(app config.App) (applier.ApplyOptions, error) {
	policy, err := policyOf(app.Conflicts)
	if err != nil {
		return applier.ApplyOptions{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	migrate, err := migrationOf(app.Migrate)
	if err != nil {
		return applier.ApplyOptions{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	ign, err := ignoreOf(app.Ignore)
	if err != nil {
		return applier.ApplyOptions{}, fmt.Errorf("app %s: %w", app.Name, err)
	}
	ao := applier.ApplyOptions{
		Policy:          policy,
		Migrate:         migrate,
		Ignore:          ign,
		RecordManagers:  true,
		ReleaseHandoff:  app.Handoff == config.HandoffRelease,
		Recreate:        app.Recreate,
		SkipValidation:  !app.Validates(),
		LocalValidation: !app.DryRunAll,
		Wait:            app.Wait,
	}
	if app.Timeout != nil {
		ao.Timeout = app.Timeout.Duration
	}
	return ao, nil
}

// applyOptions are the app's applier settings (App.Apply) with the
// fields SetFlapping reports left unforced, told to the Runner's Progress.
func (r *Runner) applyOptions(a *App) applier.ApplyOptions {
	ao := a.Apply
	ao.Progress = r.opts.Progress
	r.mu.Lock()
	if det := r.flaps[a.Config.Name]; det != nil {
		ao.Flapping = det.Flapping
	}
	r.mu.Unlock()
	return ao
}

// Apply renders the app and applies it. The plan is returned even when the
// apply fails part-way. An app in drift mode detect is refused
// (ErrDetectOnly) unless dryRun: syncd never writes for it.
func (r *Runner) Apply(ctx context.Context, app config.App, dir string, dryRun bool) (*Rendered, *applier.ChangeSet, error) {
	if err := r.detectOnly(app); err != nil && !dryRun {
		return nil, nil, err
	}
	ahead := r.readAhead(ctx, app)
	defer ahead.Stop()
	rendered, err := r.Render(ctx, app, dir)
	if err != nil {
		if r.opts.Inventory != nil {
			r.opts.Inventory.Refuse(app.Name, RefusalOf(err), err)
		}
		return nil, nil, err
	}
	cs, err := r.applyRendered(ctx, app, rendered, dryRun, ahead)
	return rendered, cs, err
}

// readAhead starts reading a local app's inventory and members while it
// renders and plans (inventory.Manager.ReadAhead), so that a one-shot
// apply's reads overlap its render. It returns nil for a remote app (its
// render reads its kubeconfig again first) or when there is nothing to
// read ahead; the apply then reads as it always did, and reports any
// error it meets.
func (r *Runner) readAhead(ctx context.Context, app config.App) *inventory.Ahead {
	if app.IsRemote() || r.local.Inventory == nil {
		return nil
	}
	a, err := r.Spec(app)
	if err != nil {
		return nil
	}
	return r.local.Inventory.ReadAhead(ctx, a.Inventory)
}

// ApplyRendered applies a rendered plan under the app's settings. An app in
// drift mode detect is refused (ErrDetectOnly) unless dryRun.
func (r *Runner) ApplyRendered(ctx context.Context, app config.App, rendered *Rendered, dryRun bool) (*applier.ChangeSet, error) {
	return r.applyRendered(ctx, app, rendered, dryRun, nil)
}

// applyRendered is ApplyRendered with what ahead read (nil: nothing).
func (r *Runner) applyRendered(ctx context.Context, app config.App, rendered *Rendered, dryRun bool, ahead *inventory.Ahead) (*applier.ChangeSet, error) {
	if err := r.detectOnly(app); err != nil && !dryRun {
		return nil, err
	}
	a, err := r.Spec(app)
	if err != nil {
		return nil, err
	}
	target, err := r.Target(ctx, app)
	if err != nil {
		return nil, err
	}
	return r.applyOn(ctx, a, target, rendered, dryRun, ahead)
}

// applyOn applies a rendered plan of a compiled app to a target under the
// app's settings, and prunes there what its inventory holds and the plan
// does not.
func (r *Runner) applyOn(ctx context.Context, a *App, target *Target, rendered *Rendered, dryRun bool, ahead *inventory.Ahead) (*applier.ChangeSet, error) {
	app := a.Config
	ao := r.applyOptions(a)
	dyn, err := target.Dynamic(app)
	if err != nil {
		return nil, err
	}
	md, err := target.Metadata(app)
	if err != nil {
		return nil, err
	}
	ap, err := applier.New(dyn, target.Cluster.Mapper, applier.Options{Concurrency: r.opts.Concurrency, DryRun: dryRun, Metadata: md, Facts: target.Cluster.Dynamic})
	if err != nil {
		return nil, err
	}
	if !dryRun && !r.opts.Once {
		ao.Accepted = r.acceptedFor(a, target)
	}
	var run *inventory.Run
	if target.Inventory != nil {
		if run, err = target.Inventory.BeginAhead(ctx, ahead, a.Inventory, rendered.Plan, dryRun); err != nil {
			return nil, err
		}
		if !dryRun && rendered.Revision.SHA != "" {
			rendered.Rewind = r.checkRewind(ctx, app, run, rendered.Revision)
		}
		ao = run.Hooks(ao)
	}
	cs, err := ap.Apply(ctx, rendered.Plan, ao)
	if run != nil {
		rep, perr := run.Finish(ctx, cs, err)
		rendered.Prune = rep
		if err == nil {
			err = pruneFailed(perr)
		}
	}
	if cs != nil {
		cs.Revision = rendered.Plan.Revision
	}
	return cs, err
}

// Dynamic returns the client an app's requests for its objects go
// through (applies, dry runs, health, drift reads and watches) on the
// app's cluster (Target): that cluster's own, or, with
// serviceAccountName, one impersonating that service account there
// (package identity), so the app cannot do outside its RBAC.
func (r *Runner) Dynamic(app config.App) (dynamic.Interface, error) {
	t, err := r.Target(context.Background(), app)
	if err != nil {
		return nil, err
	}
	return t.Dynamic(app)
}

// ErrNoApps is returned when a config has no apps to run.
var ErrNoApps = errors.New("the config has no apps")
