package main

import (
	"context"
	"errors"
	"fmt"
	"os"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/renderproc"
)

// inventoryFlags choose where each app's ApplySet inventory lives.
type inventoryFlags struct {
	namespace   string
	pruneBudget int
	noWatch     bool
}

func (f *inventoryFlags) register(fs *pflag.FlagSet, watch bool) {
	def := os.Getenv("POD_NAMESPACE")
	if def == "" {
		def = "syncd-system"
	}
	fs.StringVar(&f.namespace, "inventory-namespace", def, "namespace of the apps' inventory Secrets (ApplySet parents); must exist")
	fs.IntVar(&f.pruneBudget, "prune-budget", -1, "override every app's pruneBudget for this run (percent of the app's objects one prune may delete)")
	if watch {
		fs.BoolVar(&f.noWatch, "no-watch-cache", false, "read every object with a GET instead of a watch cache")
	}
}

// registerNamespace registers --inventory-namespace alone, for the
// commands that only read inventories (tree, history, events).
func (f *inventoryFlags) registerNamespace(fs *pflag.FlagSet) {
	def := os.Getenv("POD_NAMESPACE")
	if def == "" {
		def = "syncd-system"
	}
	fs.StringVar(&f.namespace, "inventory-namespace", def, "namespace of the apps' inventory Secrets (ApplySet parents), as the daemon runs with")
}

// newInventory builds the inventory manager, checking its namespace.
func newInventory(ctx context.Context, cl *cluster, f *inventoryFlags, reg prometheus.Registerer, oneShot bool) (*inventory.Manager, error) {
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return nil, err
	}
	if _, err := cs.CoreV1().Namespaces().Get(ctx, f.namespace, metav1.GetOptions{}); err != nil {
		if apierrors.IsForbidden(err) {
			return nil, fmt.Errorf("inventory namespace %q: %w (the apps' inventory Secrets there are syncd's, which a tenant may not read, docs/security.md#tenants: run this with the operator's credentials, or set --inventory-namespace if the daemon uses another)", f.namespace, err)
		}
		return nil, fmt.Errorf("inventory namespace %q: %w (create it, e.g. kubectl create namespace %s, or set --inventory-namespace)", f.namespace, err, f.namespace)
	}
	md, err := metadata.NewForConfig(cl.config)
	if err != nil {
		return nil, err
	}
	opts := f.options(reg, oneShot)
	// Apps with serviceAccountName read, delete and patch their members
	// as that account.
	opts.Config = cl.config
	return inventory.New(cl.dynamic, md, cl.mapper, opts)
}

// options are the inventory settings the flags ask for, without clients:
// syncd's own cluster's, and the template of remote clusters' (each gets
// its cluster's clients, reconcile.TargetsOptions.Inventory).
func (f *inventoryFlags) options(reg prometheus.Registerer, oneShot bool) inventory.Options {
	opts := inventory.Options{Namespace: f.namespace, Version: version, Registerer: reg, NoWatch: oneShot || f.noWatch, Reserved: reservedFor(f.namespace)}
	if f.pruneBudget >= 0 {
		b := f.pruneBudget
		opts.PruneBudget = &b
	}
	return opts
}

// openConfig loads the config, connects to the cluster and returns a
// Runner with the selected apps (one app, or all in config order).
func openConfig(ctx context.Context, path, appName string, kube *kubeFlags, inv *inventoryFlags, cacheDir string, concurrency int) (*reconcile.Runner, []config.App, *cluster, error) {
	return configOpen{path: path, app: appName, kube: kube, inventory: inv, cacheDir: cacheDir, concurrency: concurrency}.open(ctx)
}

// configOpen is what opening a config takes: the file, the app to select
// (empty: every app), the cluster and inventory flags (nil inventory: no
// inventory, as for syncd drift) and the Runner's settings.
type configOpen struct {
	path, app   string
	kube        *kubeFlags
	inventory   *inventoryFlags
	cacheDir    string
	concurrency int
	// progress is told how each apply advances; nil: no one.
	progress applier.Progress
	// renderer renders the apps; nil: renderproc.Default.
	renderer *renderproc.Renderer
	// loaded, when set, is given the config as soon as it is loaded,
	// before the cluster is connected to.
	loaded func(*config.Config)
}

// open loads the config, connects to the cluster and returns a Runner
// with the selected apps (one app, or all in config order).
func (o configOpen) open(ctx context.Context) (*reconcile.Runner, []config.App, *cluster, error) {
	cfg, err := config.Load(o.path)
	if err != nil {
		return nil, nil, nil, err
	}
	go planner.PrepareBuiltinSchema()
	if o.loaded != nil {
		o.loaded(cfg)
	}
	cl, err := o.kube.connect()
	if err != nil {
		return nil, nil, nil, err
	}
	go cl.readDiscovery()
	runner, err := o.runner(ctx, cfg, cl)
	if err != nil {
		return nil, nil, nil, err
	}
	if o.app != "" {
		app, err := runner.App(o.app)
		if err != nil {
			return nil, nil, nil, err
		}
		return runner, []config.App{app}, cl, nil
	}
	if len(cfg.Apps) == 0 {
		return nil, nil, nil, reconcile.ErrNoApps
	}
	return runner, cfg.Apps, cl, nil
}

// runner returns a Runner of cfg's apps on cl with o's settings (o.path
// and o.app are not used).
func (o configOpen) runner(ctx context.Context, cfg *config.Config, cl *cluster) (*reconcile.Runner, error) {
	var err error
	// syncd drift has no inventory: syncd's own namespace is still
	// reserved.
	// A one-shot command applies each app once (reconcile.Options.Once).
	opts := reconcile.Options{CacheDir: o.cacheDir, Concurrency: o.concurrency, Reserved: reservedFor(""), Namespace: syncdNamespace(), Progress: o.progress, Once: true}
	if o.renderer != nil {
		opts.Renderer = o.renderer
	}
	var remoteInv *inventory.Options
	if o.inventory != nil {
		opts.Reserved = reservedFor(o.inventory.namespace)
		if opts.Inventory, err = newInventory(ctx, cl, o.inventory, nil, true); err != nil {
			return nil, err
		}
		remote := o.inventory.options(nil, true)
		remoteInv = &remote
	}
	// The command exits after its run: the remote targets' one-shot
	// inventories run no watches to stop.
	opts.Targets = o.kube.remoteTargets(cl, remoteInv)
	return reconcile.New(cfg, reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config}, opts)
}

// exitCodeOf returns the exit code an error carries (1 when none).
func exitCodeOf(err error) int {
	var ce *exitCodeError
	if errors.As(err, &ce) {
		return ce.code
	}
	return exitError
}

// loadConfigForRun loads and validates the config the daemon will run.
func loadConfigForRun(path string) (*config.Config, error) { return config.Load(path) }
