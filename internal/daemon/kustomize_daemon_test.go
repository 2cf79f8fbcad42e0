package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// overlayRepo is a repository laid out like most kustomize repositories:
// one base, overlays two levels below it, a patch shared from
// overlays/common.
func overlayRepo(ns string) map[string]string {
	return map[string]string{
		"base/kustomization.yaml":    "resources: [settings.yaml]\n",
		"base/settings.yaml":         "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: plain\n",
		"overlays/common/color.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: overlaid\n",
		"overlays/good/kustomization.yaml": fmt.Sprintf(
			"namespace: %s\nnameSuffix: -good\nresources: [../../base]\npatches:\n- path: ../common/color.yaml\n", ns),
		"overlays/broken/kustomization.yaml": fmt.Sprintf(
			"namespace: %s\nnameSuffix: -broken\nresources: [../../base]\n", ns),
	}
}

// init makes kustomize panic while building overlays/broken (a nil map
// write: what a kustomize bug looks like). It is set for the whole test
// binary, not in the test, because the build runs in a render child
// process (the test binary re-executed, package renderproc): the child
// runs this init, not the test. No other test builds overlays/broken.
func init() {
	planner.BeforeKustomizeBuildForTest = func(dir string) {
		if dir == "overlays/broken" {
			var m map[string]int
			m["kustomize"]++
		}
	}
}

// TestDaemonKustomizePanicFailsOneApp: two apps of one daemon, both
// overlays of ../../base served by a real Git server. Kustomize panics
// while building one of them: that app fails with its kustomization named,
// and the other syncs.
func TestDaemonKustomizePanicFailsOneApp(t *testing.T) {
	ns := env.Namespace(t)

	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "platform")
	files := map[string][]byte{}
	for name, content := range overlayRepo(ns) {
		files[name] = []byte(content)
	}
	if _, err := repo.Commit("overlays", files); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: %s
    branch: main
    interval: 1h
apps:
- name: broken
  source: repo
  path: overlays/broken
  namespace: %[2]s
- name: good
  source: repo
  path: overlays/good
  namespace: %[2]s
`, repo.URL, ns)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d := launchDaemon(t, daemon.Options{
		ConfigPath:  cfgPath,
		Cluster:     cluster(t),
		Options:     reconcile.Options{CacheDir: t.TempDir()},
		ConfigCheck: 200 * time.Millisecond,
	})
	status := func(app string) daemon.AppStatus {
		for _, s := range d.Status() {
			if s.App == app {
				return s
			}
		}
		return daemon.AppStatus{}
	}
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	reconciletest.Eventually(t, "good synced, broken failed", func() (bool, string) {
		cm, err := cms.Get(context.Background(), "settings-good", metav1.GetOptions{})
		color := ""
		if err == nil {
			color = cm.Data["color"]
		}
		g, b := status("good"), status("broken")
		return color == "overlaid" && g.Result == "ok" && b.Result == "failed",
			fmt.Sprintf("settings-good color=%q (%v) good=%+v broken=%+v", color, err, g, b)
	})
	b := status("broken")
	for _, want := range []string{"overlays/broken/kustomization.yaml", "kustomize panicked (assignment to entry in nil map)"} {
		if !strings.Contains(b.Error, want) {
			t.Errorf("broken app's error does not mention %q:\n%s", want, b.Error)
		}
	}
	if _, err := cms.Get(context.Background(), "settings-broken", metav1.GetOptions{}); err == nil {
		t.Errorf("the broken app's ConfigMap was applied")
	}
}
