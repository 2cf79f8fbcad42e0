package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{ControllerManager: true}, &env) }

func writeConfig(t *testing.T, path, repoDir, ns, interval string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: file://%s
    branch: main
    interval: %s
apps:
- name: web
  source: repo
  path: app
  namespace: %s
`, repoDir, interval, ns)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// followed is what Sources() says of each source, by name: its URL and
// what it follows (branch, tag, semver or commit, and its value).
func followed(srcs []config.Source) map[string]string {
	out := map[string]string{}
	for _, s := range srcs {
		kind, value := s.Git.Ref()
		out[s.Name] = s.URL() + " " + kind + " " + value
	}
	return out
}

// cluster is the test control plane's reconcile.Cluster.
func cluster(t *testing.T) reconcile.Cluster {
	t.Helper()
	return reconciletest.Cluster(t, env.Config)
}

// TestDaemonEndToEnd: a commit lands and is applied within one poll; a
// Trigger polls at once; a bad commit keeps the previous state, prunes
// nothing and shows the error in the status; an invalid new config is
// rejected while the old one keeps running.
func TestDaemonEndToEnd(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	// A long interval: only the start poll and triggers run in this test.
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")

	d := launchDaemon(t, daemon.Options{
		ConfigPath:  cfgPath,
		Cluster:     cluster(t),
		Options:     reconcile.Options{CacheDir: t.TempDir()},
		ConfigCheck: 200 * time.Millisecond,
	})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	color := func() string {
		cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return "<absent>"
		}
		if err != nil {
			return err.Error()
		}
		return cm.Data["color"]
	}
	status := func() daemon.AppStatus {
		for _, s := range d.Status() {
			if s.App == "web" {
				return s
			}
		}
		return daemon.AppStatus{}
	}

	reconciletest.Eventually(t, "first revision applied and daemon ready", func() (bool, string) {
		return color() == "blue" && d.Ready(), fmt.Sprintf("color=%s ready=%v status=%+v", color(), d.Ready(), status())
	})

	if diff := cmp.Diff(map[string]string{"repo": "file://" + repo.Dir + " branch main"}, followed(d.Sources())); diff != "" {
		t.Errorf("Sources() (-want +got):\n%s", diff)
	}

	// A push: the webhook path triggers an immediate poll.
	repo.Commit("green", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "green")})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "triggered revision applied", func() (bool, string) {
		return color() == "green" && status().Result == "ok", fmt.Sprintf("color=%s status=%+v", color(), status())
	})

	// A bad commit: broken YAML. Nothing changes, the error is visible.
	repo.Commit("broken", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n"})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "render error reported", func() (bool, string) {
		s := status()
		return s.Result == "failed" && strings.Contains(s.Error, "cm.yaml"), fmt.Sprintf("status=%+v", s)
	})
	if got := color(); got != "green" {
		t.Fatalf("after a broken commit the ConfigMap is %q, want green kept", got)
	}

	// An invalid config replaces the file: rejected, the old one runs on.
	if err := os.WriteFile(cfgPath, []byte("apiVersion: syncd/v1alpha1\nkind: Config\napps:\n- name: web\n  source: nowhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "invalid config rejected", func() (bool, string) {
		e := d.ConfigError()
		return strings.Contains(e, "nowhere"), "configError=" + e
	})
	// Webhooks still match the sources of the config in force.
	if _, ok := followed(d.Sources())["repo"]; !ok {
		t.Errorf("after a rejected config, Sources() = %v, want the running config's repo", d.Sources())
	}
	repo.Commit("fixed", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "red")})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "old config still applies new commits", func() (bool, string) {
		return color() == "red", "color=" + color()
	})
}
