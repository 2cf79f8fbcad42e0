package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonReloadKeepsDriftAlert: a drift alerted under conflicts
// fail, then a syncd.yaml edit (a new generation: new Runner, new drift
// watcher, which takes over what the old one found). A policy of force
// takes the field back and the drift is resolved, once, after the field
// matches Git again; an edit that leaves the field taken neither
// resolves nor alerts it again.
func TestDaemonReloadKeepsDriftAlert(t *testing.T) {
	tests := map[string]struct {
		policy, interval string
		// fixed: the new config takes the field back.
		fixed bool
	}{
		"fail to force":  {policy: "force", interval: "1h", fixed: true},
		"unrelated edit": {policy: "fail", interval: "2h"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			repo := reconciletest.NewRepo(t)
			repo.Commit("first", map[string]string{
				"app/cm.yaml":     reconciletest.ConfigMap(ns, "blue"),
				"app/marker.yaml": reconciletest.NamedConfigMap(ns, "marker", "blue"),
			})
			h := startHook(t)
			cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
			config := func(policy, interval string) []byte {
				return []byte(fmt.Sprintf("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: file://%s\n    branch: main\n    interval: %s\napps:\n"+
					"- name: web\n  source: repo\n  path: app\n  namespace: %s\n  conflicts:\n    default: %s\n", repo.Dir, interval, ns, policy) + h.alertsFor("drift"))
			}
			if err := os.WriteFile(cfgPath, config("fail", "1h"), 0o644); err != nil {
				t.Fatal(err)
			}
			startDaemon(t, daemon.Options{ConfigPath: cfgPath, Cluster: cluster(t), MaxBackoff: time.Hour, ConfigCheck: 200 * time.Millisecond})
			takeColor(t, ns, "settings", "red")
			open, _ := h.waitAlert(t, "the drift is alerted", 0, func(p alert.WebhookPayload) bool { return opened("drift")(p) && p.Object.Name == "settings" })

			if err := os.WriteFile(cfgPath, config(tc.policy, tc.interval), 0o644); err != nil {
				t.Fatal(err)
			}
			if tc.fixed {
				h.waitAlert(t, "the drift is resolved", 0, resolvedAs(open.Fingerprint))
				cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
				if err != nil || cm.Data["color"] != "blue" {
					t.Errorf("resolved while ConfigMap settings has color %q (%v); want Git's blue", cm.Data["color"], err)
				}
			} else {
				// The new generation's watcher judged the app's objects
				// once it alerts the marker's drift.
				takeColor(t, ns, "marker", "red")
				h.waitAlert(t, "the new watcher alerts the marker's drift", 0, func(p alert.WebhookPayload) bool { return opened("drift")(p) && p.Object.Name == "marker" })
			}
			want := 0
			if tc.fixed {
				want = 1
			}
			isOpen := func(p alert.WebhookPayload) bool { return opened("drift")(p) && p.Fingerprint == open.Fingerprint }
			if n, m := h.count(isOpen), h.count(resolvedAs(open.Fingerprint)); n != 1 || m != want {
				t.Errorf("the drift was alerted %d time(s) and resolved %d time(s), want 1 and %d: %+v", n, m, want, h.alerts())
			}
		})
	}
}

// takeColor sets a ConfigMap's data.color as another manager ("ops"),
// taking the field with a forced server-side apply.
func takeColor(t *testing.T, ns, name, color string) {
	t.Helper()
	patch := fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":%q},"data":{"color":%q}}`, name, color)
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.ApplyPatchType, []byte(patch), metav1.PatchOptions{FieldManager: "ops", Force: ptrTo(true)})
	if err != nil {
		t.Fatal(err)
	}
}
