package main

import (
	"context"
	"fmt"
	"log/slog"
	"path/filepath"
	"slices"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
	"syncd.dev/syncd/internal/reconcile"
)

// appObjectsServed reports whether the API server serves syncd's App
// and GitSource resources (the CRDs of manifests/crds are installed).
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
	return slices.Contains(names, v1alpha1.AppResource.Resource) && slices.Contains(names, v1alpha1.GitSourceResource.Resource), nil
}

// appControllerFor returns how to build the controller of App objects
// beside the file config's apps, or nil when the CRDs are not installed.
// The file's app names are reserved: an App whose name collides is
// refused. Each leadership term builds its own controller (a stopped
// controller's informers and queue cannot start again).
func appControllerFor(cl *cluster, f *runFlags, opts reconcile.Options, cfg *config.Config, names *controller.Names, events record.EventRecorder, log *slog.Logger) (func() (*controller.Controller, error), error) {
	served, err := appObjectsServed(cl)
	if err != nil || !served {
		if err == nil {
			log.Info("App and GitSource CRDs are not installed; only the config file's apps run (kubectl apply -k manifests/crds to add them)")
		}
		return nil, err
	}
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return nil, err
	}
	var fileApps []string
	for _, a := range cfg.Apps {
		fileApps = append(fileApps, a.Name)
	}
	names.SetFile(fileApps)
	base := opts.CacheDir
	if base == "" {
		base = reconcile.DefaultCacheDir()
	}
	// A directory no source name can take (source names start with a
	// letter or digit).
	opts.CacheDir = filepath.Join(base, ".app-objects")
	copts := controller.Options{
		Cluster: reconcile.Cluster{Dynamic: cl.dynamic, Mapper: cl.mapper, Config: cl.config},
		Runner:  opts,
		Secrets: controller.ClientSecrets{Client: cs},
		Names:   names,
		Events:  events,
		InShard: func(app string) bool { return reconcile.ShardOf(app, f.shards) == f.shard || f.shards <= 1 },
		Logger:  log.With("controller", "apps"),
	}
	if _, err := controller.New(copts); err != nil {
		return nil, err
	}
	return func() (*controller.Controller, error) { return controller.New(copts) }, nil
}

// withAppController runs the App controller beside run (the file
// daemon) when there is one: both stop when ctx ends or either fails.
func withAppController(newCtrl func() (*controller.Controller, error), run func(context.Context) error) func(context.Context) error {
	if newCtrl == nil {
		return run
	}
	return func(ctx context.Context) error {
		ctrl, err := newCtrl()
		if err != nil {
			return err
		}
		g, ctx := errgroup.WithContext(ctx)
		g.Go(func() error { return run(ctx) })
		g.Go(func() error { return ctrl.Run(ctx) })
		return g.Wait()
	}
}
