package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/spf13/pflag"
	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appmetrics"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/webhook"
)

// appFlags are syncd run's tenancy settings for App objects.
type appFlags struct {
	crossNamespaceSources bool
	defaultServiceAccount string
}

func (f *appFlags) register(fs *pflag.FlagSet) {
	fs.BoolVar(&f.crossNamespaceSources, strings.TrimPrefix(controller.FlagCrossNamespaceSources, "--"), false,
		"let an App reference a GitSource of another namespace (spec.sourceRef.namespace), and so use its credentials; off: such an App is refused")
	fs.StringVar(&f.defaultServiceAccount, strings.TrimPrefix(controller.FlagDefaultServiceAccount, "--"), "",
		"service account of its own namespace every App without spec.serviceAccountName runs as (impersonation); empty: such Apps run as syncd")
}

// tenancy is the controller's policy the flags set.
func (f appFlags) tenancy() controller.Tenancy {
	return controller.Tenancy{CrossNamespaceSources: f.crossNamespaceSources, DefaultServiceAccount: f.defaultServiceAccount}
}

// appObjectsServed reports whether the API server serves syncd's App
// and source resources (the CRDs of manifests/crds are installed): the
// controller watches every kind, and a watch of a kind not served would
// never sync.
func appObjectsServed(cl *cluster) (bool, error) {
	list, err := cl.discovery.ServerResourcesForGroupVersion(v1alpha1.GroupVersion.String())
	if err != nil {
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return false, fmt.Errorf("discover %s: %w", v1alpha1.GroupVersion, err)
	}
	var names []string
	for _, r := range list.APIResources {
		names = append(names, r.Name)
	}
	for _, r := range []string{v1alpha1.AppResource.Resource, v1alpha1.GitSourceResource.Resource, v1alpha1.HelmSourceResource.Resource, v1alpha1.OCISourceResource.Resource} {
		if !slices.Contains(names, r) {
			return false, nil
		}
	}
	return true, nil
}

// appControllerFor returns how to build the controller of App objects
// beside the config file's apps (cfg; without --config an empty one, so
// that the controller is all that runs). The file's app names are
// reserved: an App whose name collides is refused. Each leadership term
// builds its own controller (a stopped controller's informers and queue
// cannot start again). When the CRDs are not served yet, building waits
// for them (appCRDPoll), so CRDs installed after syncd started are
// picked up without a restart.
func appControllerFor(cl *cluster, f *runFlags, opts reconcile.Options, cfg *config.Config, names *controller.Names, events record.EventRecorder, reg prometheus.Registerer, metrics *appmetrics.Apps, log *slog.Logger) (func(context.Context) (*controller.Controller, error), error) {
	served, err := appObjectsServed(cl)
	if err != nil {
		return nil, err
	}
	switch {
	case !served && f.config == "":
		log.Warn("syncd's CRDs (App, GitSource, HelmSource, OCISource) are not all installed and there is no --config: nothing runs until they are (syncd install installs them), checked every " + appCRDPoll.String())
	case !served:
		log.Info("syncd's CRDs (App, GitSource, HelmSource, OCISource) are not all installed; only the config file's apps run until they are (syncd install installs them), checked every " + appCRDPoll.String())
	}
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return nil, err
	}
	md, err := metadata.NewForConfig(cl.config)
	if err != nil {
		return nil, err
	}
	var fileApps []string
	fileManagers := map[string]string{}
	for _, a := range cfg.Apps {
		fileApps = append(fileApps, a.Name)
		for _, m := range a.Managers() {
			fileManagers[m] = a.Name
		}
	}
	names.SetFile(fileApps)
	names.SetFileManagers(fileManagers)
	base := opts.CacheDir
	if base == "" {
		base = reconcile.DefaultCacheDir()
	}
	// A directory no source name can take (source names start with a
	// letter or digit).
	opts.CacheDir = filepath.Join(base, ".app-objects")
	copts := controller.Options{
		Cluster:  reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config},
		Runner:   opts,
		Secrets:  controller.ClientSecrets{Client: cs},
		Metadata: md,
		Names:    names,
		Events:   events,
		Tenancy:  f.apps.tenancy(),
		Alerts:   alert.Options{Registerer: reg},
		Metrics:  metrics,
		InShard:  func(app string) bool { return daemon.ShardOf(app, f.shards) == f.shard || f.shards <= 1 },
		Workers:  f.concurrentApps,
		Logger:   log.With("controller", "apps"),
	}
	if _, err := controller.New(copts); err != nil {
		return nil, err
	}
	return func(ctx context.Context) (*controller.Controller, error) {
		if err := waitForAppCRDs(ctx, cl, log); err != nil {
			return nil, err
		}
		return controller.New(copts)
	}, nil
}

// appCRDPoll is how often syncd looks for its CRDs while they are not
// installed: one discovery request, so that CRDs installed after syncd
// start their controller within seconds.
const appCRDPoll = 10 * time.Second

// waitForAppCRDs returns once the API server serves the App and source
// resources, or when ctx ends (nil then: there is nothing to
// run). A discovery error is logged and retried.
func waitForAppCRDs(ctx context.Context, cl *cluster, log *slog.Logger) error {
	t := time.NewTicker(appCRDPoll)
	defer t.Stop()
	for logged := false; ; {
		served, err := appObjectsServed(cl)
		switch {
		case served:
			if logged {
				log.Info("syncd's CRDs installed; starting the App controller")
			}
			return nil
		case err != nil:
			log.Warn("looking for syncd's CRDs", "error", err)
		}
		logged = true
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-t.C:
		}
	}
}

// withAppController runs the App controller beside run (the file
// daemon) when there is one: both stop when ctx ends or either fails.
// While it runs, apps holds it for the push webhooks.
func withAppController(newCtrl func(context.Context) (*controller.Controller, error), apps *runningApps, run func(context.Context) error) func(context.Context) error {
	if newCtrl == nil {
		return run
	}
	return func(ctx context.Context) error {
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return run(ctx) })
		g.Go(func() error {
			ctrl, err := newCtrl(ctx)
			if err != nil {
				if ctx.Err() != nil {
					return nil // stopped while waiting for the CRDs
				}
				return err
			}
			apps.set(ctrl)
			defer apps.set(nil)
			return ctrl.Run(ctx)
		})
		return g.Wait()
	}
}

// runningApps is the App controller of the current leadership term, as
// the push webhooks poll it (webhook.Poller): each term builds its own
// controller, and the webhook listener outlives them. It lists no
// GitSource while this replica runs no controller (a standby, or the
// CRDs not installed yet), so a push it receives polls none, as the
// daemon's sources on a standby.
type runningApps struct {
	mu   sync.Mutex
	ctrl *controller.Controller
}

var _ webhook.Poller = (*runningApps)(nil)

// set makes c the running controller (nil: none runs).
func (r *runningApps) set(c *controller.Controller) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.ctrl = c
}

func (r *runningApps) current() *controller.Controller {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.ctrl
}

// Sources lists the GitSources of the running controller's Apps.
func (r *runningApps) Sources() []config.Source {
	if c := r.current(); c != nil {
		return c.Sources()
	}
	return nil
}

// Trigger polls a GitSource through the running controller.
func (r *runningApps) Trigger(source string) error {
	if c := r.current(); c != nil {
		return c.Trigger(source)
	}
	return errAppsNotRunning
}

// errAppsNotRunning: no App controller runs on this replica.
var errAppsNotRunning = errors.New("the App controller does not run on this replica")
