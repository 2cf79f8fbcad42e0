package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// writeDependsConfig writes a config of two sources polled hourly (only
// the start poll and triggers run): app back from backRepo, and app front
// from frontRepo, which depends on back.
func writeDependsConfig(t *testing.T, path, backRepo, frontRepo, ns string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: be
  git:
    url: file://%s
    branch: main
    interval: 1h
- name: fe
  git:
    url: file://%s
    branch: main
    interval: 1h
apps:
- name: front
  source: fe
  path: app
  namespace: %s
  dependsOn: [back]
- name: back
  source: be
  path: app
  namespace: %s
`, backRepo, frontRepo, ns, ns)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestDaemonDependsOn: while back fails, front is held (not applied) with
// /status saying what it waits for and why, and the metric set; once back
// applies (its source triggered, front's never polled again), front is
// applied at once and its wait cleared.
func TestDaemonDependsOn(t *testing.T) {
	ns := env.Namespace(t)
	back, front := reconciletest.NewRepo(t), reconciletest.NewRepo(t)
	// back's ConfigMap goes to a namespace that does not exist: it fails.
	back.Commit("broken", map[string]string{"app/cm.yaml": reconciletest.NamedConfigMap(ns+"-missing", "back", "red")})
	front.Commit("first", map[string]string{"app/cm.yaml": reconciletest.NamedConfigMap(ns, "front", "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeDependsConfig(t, cfgPath, back.Dir, front.Dir, ns)

	metrics := daemon.NewMetrics(nil)
	began := time.Now()
	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
		Metrics:    metrics,
	})
	status := func(app string) daemon.AppStatus { return appStatus(d, app) }
	exists := func(name string) bool {
		_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		return err == nil
	}

	// The scheduler spreads the sources' first polls over 30 s: fe's comes
	// about 15 s after be's, and then not for an hour.
	reconciletest.Eventually(t, "front held while back fails", func() (bool, string) {
		s := status("front")
		ok := s.Result == daemon.ResultWaiting && s.Waiting != nil && len(s.Waiting.On) == 1 &&
			s.Waiting.On[0].App == "back" && s.Waiting.On[0].Reason == daemon.WaitFailed &&
			strings.Contains(s.Waiting.On[0].Message, "ended failed") && d.Ready()
		return ok, fmt.Sprintf("front=%+v waiting=%+v back=%+v ready=%v", s, s.Waiting, status("back"), d.Ready())
	})
	if exists("front") {
		t.Fatal("front was applied while its dependency back failed")
	}
	if n := testutil.ToFloat64(metrics.DependencyWaiting.WithLabelValues("front", "local", "back", "failed")); n != 1 {
		t.Errorf(`syncd_dependency_waiting{app="front",dependency="back",reason="failed"} = %v, want 1`, n)
	}
	t.Logf("front waits (%s after start): %s", time.Since(began).Round(time.Millisecond), status("front").Waiting.On[0].Message)

	// back is fixed and only its source is polled: front follows at once.
	back.Commit("fixed", map[string]string{"app/cm.yaml": reconciletest.NamedConfigMap(ns, "back", "red")})
	start := time.Now()
	if err := d.Trigger("be"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "front applied after back", func() (bool, string) {
		s := status("front")
		return s.Result == reconcile.ResultOK && s.Waiting == nil && exists("front"),
			fmt.Sprintf("front=%+v back=%+v", s, status("back"))
	})
	t.Logf("front applied %s after back's source was triggered", time.Since(start).Round(time.Millisecond))
	if s := status("back"); s.Result != reconcile.ResultOK {
		t.Errorf("back: %+v, want ok", s)
	}
	if n := testutil.CollectAndCount(metrics.DependencyWaiting); n != 0 {
		t.Errorf("syncd_dependency_waiting has %d series after front applied, want none", n)
	}
}

// writeChainConfig writes a config of one source with the chain a → b → c (a depends
// on b, which depends on c), each app rendering its own directory.
func writeChainConfig(t *testing.T, path, repo, ns string) {
	t.Helper()
	var apps strings.Builder
	for _, a := range [][2]string{{"a", "[b]"}, {"b", "[c]"}, {"c", "[]"}} {
		fmt.Fprintf(&apps, "- name: %s\n  source: repo\n  path: %s\n  namespace: %s\n  dependsOn: %s\n", a[0], a[0], ns, a[1])
	}
	cfg := fmt.Sprintf("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: file://%s\n    branch: main\n    interval: 1h\napps:\n%s", repo, apps.String())
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// chainFiles is one ConfigMap per app with color; broken's goes to a
// namespace that does not exist.
func chainFiles(ns, color, broken string) map[string]string {
	files := map[string]string{}
	for _, app := range []string{"a", "b", "c"} {
		target := ns
		if app == broken {
			target = ns + "-missing"
		}
		files[app+"/cm.yaml"] = reconciletest.NamedConfigMap(target, app, color)
	}
	return files
}

// TestDaemonDependsOnChain: three apps of one source, each poll handing
// all of them the same revision. When c fails at a new revision, b waits
// for it (failed) and a for b (waiting), both left at the previous
// revision; once c is fixed, the chain applies the fix.
func TestDaemonDependsOnChain(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("blue", chainFiles(ns, "blue", ""))
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeChainConfig(t, cfgPath, repo.Dir, ns)
	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
	})
	colors := func() string {
		var out []string
		for _, app := range []string{"a", "b", "c"} {
			cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), app, metav1.GetOptions{})
			switch {
			case apierrors.IsNotFound(err):
				out = append(out, app+"=<absent>")
			case err != nil:
				t.Fatal(err)
			default:
				out = append(out, app+"="+cm.Data["color"])
			}
		}
		return strings.Join(out, " ")
	}
	results := func() string {
		var out []string
		for _, s := range d.Status() {
			out = append(out, s.App+"="+string(s.Result))
		}
		return strings.Join(out, " ")
	}
	reconciletest.Eventually(t, "chain applied", func() (bool, string) {
		return colors() == "a=blue b=blue c=blue" && results() == "a=ok b=ok c=ok", colors() + "; " + results()
	})

	repo.Commit("green, c broken", chainFiles(ns, "green", "c"))
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "b and a held behind c", func() (bool, string) {
		return results() == "a=waiting b=waiting c=failed", results()
	})
	for _, s := range d.Status() {
		switch s.App {
		case "a":
			if s.Waiting == nil || s.Waiting.On[0].Reason != daemon.WaitWaiting {
				t.Errorf("a waits for %+v, want b, waiting", s.Waiting)
			}
		case "b":
			if s.Waiting == nil || s.Waiting.On[0].Reason != daemon.WaitFailed {
				t.Errorf("b waits for %+v, want c, failed", s.Waiting)
			}
		}
	}
	if got := colors(); got != "a=blue b=blue c=blue" {
		t.Errorf("while c fails: %s, want a and b left blue", got)
	}

	repo.Commit("red, fixed", chainFiles(ns, "red", ""))
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the fix applied down the chain", func() (bool, string) {
		return colors() == "a=red b=red c=red" && results() == "a=ok b=ok c=ok", colors() + "; " + results()
	})
}
