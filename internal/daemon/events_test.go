package daemon_test

import (
	"context"
	"encoding/json"
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
// inventory parent: Synced after an apply, RenderFailed (the App
// controller's reason for the same failure) after a broken commit.
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
	reconciletest.Eventually(t, "RenderFailed event", func() (bool, string) { return events("RenderFailed") })
}

// TestDaemonForcedRevertIsCounted: a hand edit (kubectl edit's manager)
// taken back by a force rule is a write: the Synced Event counts it
// ("1 forced", not "0 created, 0 configured" alone) and the app's
// history records the revert.
func TestDaemonForcedRevertIsCounted(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	cl := cluster(t)
	invNS := env.Namespace(t)
	inv := newInventory(t, env.Config, cl, invNS)
	cs := env.Clientset(t)
	d := launchConfig(t, fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: "file://%s", branch: main, interval: 1h}
apps:
- name: web
  source: repo
  path: app
  namespace: %s
  conflicts:
    default: fail
    rules:
    - managers: ["kubectl-*"]
      action: force
`, repo.Dir, ns), daemon.Options{
		Cluster: cl,
		Options: reconcile.Options{CacheDir: t.TempDir(), Inventory: inv},
		Events:  eventRecorder(t),
	})
	synced := func(want string) func() (bool, string) {
		return func() (bool, string) {
			list, err := cs.CoreV1().Events(invNS).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + inventory.ParentPrefix + "web"})
			if err != nil {
				return false, err.Error()
			}
			var seen []string
			for _, e := range list.Items {
				seen = append(seen, e.Reason+": "+e.Message)
				if e.Reason == "Synced" && strings.HasSuffix(e.Message, want) {
					return true, ""
				}
			}
			return false, strings.Join(seen, " | ")
		}
	}
	reconciletest.Eventually(t, "the Synced Event of the first apply", synced("applied: 1 created, 0 configured"))

	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["color"] = "red"
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the Synced Event of the revert", synced("applied: 0 created, 0 configured, 1 forced"))
	if cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{}); err != nil || cm.Data["color"] != "blue" {
		t.Fatalf("ConfigMap after the revert: %v, %v; want color blue", cm.Data, err)
	}

	parent, err := cs.CoreV1().Secrets(invNS).Get(context.Background(), inventory.ParentPrefix+"web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var history []inventory.HistoryEntry
	if err := json.Unmarshal([]byte(parent.Annotations[inventory.AnnotationHistory]), &history); err != nil {
		t.Fatalf("history annotation: %v", err)
	}
	if len(history) != 2 || history[1].Forced != 1 || history[1].Note() != "1 forced" {
		t.Errorf("history = %+v, want the first apply and the forced revert (note %q)", history, "1 forced")
	}
}
