package daemon_test

import (
	"context"
	"io"
	"log/slog"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/client-go/rest"
	clientcmdapi "k8s.io/client-go/tools/clientcmd/api"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonRunFailsWhenFirstConfigCannotStart: a config that loads but
// cannot start (here: no discovery client can be made from the cluster's
// rest config) makes Run return the error at once instead of waiting with
// nothing running, so that a replica holding a Lease gives it up.
func TestDaemonRunFailsWhenFirstConfigCannotStart(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")

	cl := cluster(t)
	// client-go refuses a config with both an exec and an auth provider.
	bad := rest.CopyConfig(env.Config)
	bad.ExecProvider = &clientcmdapi.ExecConfig{Command: "true", APIVersion: "client.authentication.k8s.io/v1"}
	bad.AuthProvider = &clientcmdapi.AuthProviderConfig{Name: "oidc"}
	cl.Config = bad
	d, err := daemon.New(daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cl,
		Options:    reconcile.Options{CacheDir: t.TempDir()},
		Logger:     slog.New(slog.NewTextHandler(io.Discard, nil)),
	})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	err = d.Run(ctx)
	if ctx.Err() != nil {
		t.Fatal("Run kept running a config that cannot start")
	}
	if err == nil || !strings.Contains(err.Error(), "cannot run") || !strings.Contains(err.Error(), cfgPath) {
		t.Errorf("Run returned %v, want the config's path and why it cannot run", err)
	}
	if d.Ready() {
		t.Errorf("a daemon whose config cannot start reports ready")
	}
}
