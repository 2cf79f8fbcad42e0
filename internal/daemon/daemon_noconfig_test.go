package daemon_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonWithoutConfig: a daemon without a config file (empty
// ConfigPath, as syncd run without --config runs for App objects only)
// starts, runs no app and has no source, is ready at once, and runs
// until its context ends, then returns nil. Offline: no app talks to a
// cluster, so a fake client and an empty RESTMapper stand in for one.
func TestDaemonWithoutConfig(t *testing.T) {
	d, err := daemon.New(daemon.Options{
		Cluster: reconcile.Cluster{Dynamic: dynamicfake.NewSimpleDynamicClient(runtime.NewScheme()), Mapper: meta.NewDefaultRESTMapper(nil)},
		Options: reconcile.Options{CacheDir: t.TempDir()},
		Logger:  quietLogger(),
	})
	if err != nil {
		t.Fatalf("New without ConfigPath: %v", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- d.Run(ctx) }()

	reconciletest.Eventually(t, "the daemon without a config is ready", func() (bool, string) {
		select {
		case err := <-done:
			t.Fatalf("Run returned %v before its context ended", err)
		default:
		}
		return d.Ready(), "not ready"
	})
	if got := d.Status(); len(got) != 0 {
		t.Errorf("Status: got %+v, want no apps", got)
	}
	if got := d.Sources(); len(got) != 0 {
		t.Errorf("Sources: got %v, want none", got)
	}
	if got := d.ConfigError(); got != "" {
		t.Errorf("ConfigError: got %q, want none", got)
	}
	// A push webhook naming some source finds none to poll; the daemon
	// answers as a running one does, not "not running".
	if err := d.Trigger("repo"); err == nil || strings.Contains(err.Error(), "not running") {
		t.Errorf("Trigger(repo): got %v, want an unknown-source error", err)
	}

	cancel()
	select {
	case err := <-done:
		if err != nil {
			t.Errorf("Run after its context ended: %v, want nil", err)
		}
	case <-time.After(30 * time.Second):
		t.Fatal("Run did not return within 30s of its context ending")
	}
}
