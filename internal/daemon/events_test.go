package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonEvents: the daemon records Kubernetes Events on the app's
// inventory parent: Synced after an apply, ReconcileFailed after a broken
// commit.
func TestDaemonEvents(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")

	cl := cluster(t)
	invNS := env.Namespace(t) // the inventory namespace is syncd's own: no app object may live there
	inv := newInventory(t, env.Config, cl, invNS)
	cs := env.Clientset(t)

	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cl,
		Options:    reconcile.Options{CacheDir: t.TempDir(), Inventory: inv},
		Events:     eventRecorder(t),
		MaxBackoff: time.Hour,
	})
	events := func(reason string) (bool, string) {
		list, err := cs.CoreV1().Events(invNS).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			seen = append(seen, e.Reason+"@"+e.InvolvedObject.Name)
			if e.Reason == reason && e.InvolvedObject.Kind == "Secret" && e.InvolvedObject.Name == inventory.ParentPrefix+"web" {
				return true, ""
			}
		}
		return false, fmt.Sprintf("events: %s", strings.Join(seen, ", "))
	}
	reconciletest.Eventually(t, "Synced event", func() (bool, string) { return events("Synced") })
	repo.Commit("broken", map[string]string{"app/cm.yaml": "kind: [\n"})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "ReconcileFailed event", func() (bool, string) { return events("ReconcileFailed") })
}
