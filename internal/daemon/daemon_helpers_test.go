package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/client-go/kubernetes/scheme"
	typedcorev1 "k8s.io/client-go/kubernetes/typed/core/v1"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// quietLogger is the logger of a daemon whose logs the test does not read.
func quietLogger() *slog.Logger { return slog.New(slog.NewTextHandler(io.Discard, nil)) }

// launchDaemon builds a daemon from opts (a nil Logger: quietLogger) and runs
// it in the background until the test ends: the cleanup cancels Run and
// waits for it to return, before the cleanups registered earlier run.
func launchDaemon(tb testing.TB, opts daemon.Options) *daemon.Daemon {
	tb.Helper()
	if opts.Logger == nil {
		opts.Logger = quietLogger()
	}
	d, err := daemon.New(opts)
	if err != nil {
		tb.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()
	tb.Cleanup(func() {
		cancel()
		<-done
	})
	return d
}

// launchConfig writes cfg to a syncd.yaml of the test and launches a
// daemon on it (launchDaemon), re-reading it every 200ms, against the
// test cluster with a cache of the test unless opts set them.
func launchConfig(tb testing.TB, cfg string, opts daemon.Options) *daemon.Daemon {
	tb.Helper()
	opts.ConfigPath = filepath.Join(tb.TempDir(), "syncd.yaml")
	if err := os.WriteFile(opts.ConfigPath, []byte(cfg), 0o644); err != nil {
		tb.Fatal(err)
	}
	if opts.Cluster.Dynamic == nil {
		opts.Cluster = reconciletest.Cluster(tb, env.Config)
	}
	if opts.CacheDir == "" {
		opts.CacheDir = tb.TempDir()
	}
	if opts.ConfigCheck == 0 {
		opts.ConfigCheck = 200 * time.Millisecond
	}
	return launchDaemon(tb, opts)
}

// appStatus returns the status of app, the zero AppStatus when the daemon
// has none for it.
func appStatus(d *daemon.Daemon, app string) daemon.AppStatus {
	for _, s := range d.Status() {
		if s.App == app {
			return s
		}
	}
	return daemon.AppStatus{}
}

// clusterAt is reconciletest.Cluster with Config set, so apps may impersonate and
// the planner reads custom resources' schemas from the API server.
func clusterAt(tb testing.TB, cfg *rest.Config) reconcile.Cluster {
	tb.Helper()
	cl := reconciletest.Cluster(tb, cfg)
	cl.Config = cfg
	return cl
}

// newInventory returns an inventory in namespace ns on cl, reading
// metadata through cfg. It stops at cleanup, after the daemons launched
// later.
func newInventory(tb testing.TB, cfg *rest.Config, cl reconcile.Cluster, ns string) *inventory.Manager {
	tb.Helper()
	md, err := metadata.NewForConfig(cfg)
	if err != nil {
		tb.Fatal(err)
	}
	inv, err := inventory.New(cl.Dynamic, md, cl.Mapper, inventory.Options{Namespace: ns})
	if err != nil {
		tb.Fatal(err)
	}
	tb.Cleanup(inv.Stop)
	return inv
}

// eventRecorder returns a recorder whose Events are written to the API
// server as syncd's. Its broadcaster shuts down at cleanup.
func eventRecorder(tb testing.TB) record.EventRecorder {
	tb.Helper()
	broadcaster := record.NewBroadcaster()
	broadcaster.StartRecordingToSink(&typedcorev1.EventSinkImpl{Interface: env.Clientset(tb).CoreV1().Events("")})
	tb.Cleanup(broadcaster.Shutdown)
	return broadcaster.NewRecorder(scheme.Scheme, corev1.EventSource{Component: "syncd"})
}
