package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// prunedSecretValue is the value of a Secret the test prunes: no alert,
// Event, status or log line may show it.
const prunedSecretValue = "pruned-s3cret-value"

// TestDaemonPruneVisible: a prune that deletes sends a prune alert naming
// the deleted object, records a Pruned Event on the inventory parent and
// shows in /status lastPrune; a prune the budget refuses sends a prune
// alert with the guard and the objects that stay, records a PruneRefused
// Warning and shows refused with reason budget in /status. The pruned
// Secret's value appears nowhere.
func TestDaemonPruneVisible(t *testing.T) {
	ns := env.Namespace(t)
	h := startHook(t)
	repo := reconciletest.NewRepo(t)
	files := map[string]string{
		"app/secret.yaml": fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\n  namespace: %s\nstringData:\n  password: %s\n", ns, prunedSecretValue),
	}
	for _, n := range []string{"a", "b", "c", "d"} {
		files["app/"+n+".yaml"] = reconciletest.NamedConfigMap(ns, n, "blue")
	}
	repo.Commit("five objects", files)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: file://%s
    branch: main
    interval: 1h
apps:
- name: web
  source: repo
  path: app
  namespace: %s
%s`, repo.Dir, ns, strings.Replace(h.config(), "[drift]", "[prune]", 1))
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	cl, inv, rec, _ := recordedCluster(t, ns)
	d, logs := runLoggedDaemon(t, cfgPath, cl, reconcile.Options{Inventory: inv}, rec)
	status := func() daemon.AppStatus { return d.Status()[0] }
	if ok, state := converged(status(), repo.Head()); !ok {
		t.Fatalf("first sync: %s", state)
	}
	if s := status(); s.LastPrune != nil {
		t.Errorf("lastPrune after a first sync that pruned nothing = %+v, want none", *s.LastPrune)
	}
	pruneAlert := func(from int, class string) alert.WebhookPayload {
		t.Helper()
		var i int
		reconciletest.Eventually(t, "prune alert ("+class+")", func() (bool, string) {
			var ok bool
			i, ok = h.find(from, func(p alert.WebhookPayload) bool {
				return p.Type == "prune" && len(p.Fields) > 0 && p.Fields[0].Class == class
			})
			return ok, fmt.Sprintf("alerts: %+v", h.alerts())
		})
		return h.alerts()[i]
	}
	classes := func(p alert.WebhookPayload) map[string]string {
		out := map[string]string{}
		for _, f := range p.Fields {
			out[f.Path] = f.Class
		}
		return out
	}
	ref := func(kind, name string) string { return "v1 " + kind + " " + ns + "/" + name }

	// 1 of 5 objects leaves Git: within the default budget of 25%.
	repo.Commit("drop the secret", map[string]string{"app/secret.yaml": ""})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	deleted := pruneAlert(0, "deleted")
	if diff := cmp.Diff(map[string]string{ref("Secret", "creds"): "deleted"}, classes(deleted)); diff != "" {
		t.Errorf("deleting prune alert fields (-want +got):\n%s", diff)
	}
	if deleted.App != "web" || deleted.Revision != repo.Head() {
		t.Errorf("deleting prune alert app/revision = %s/%s, want web/%s", deleted.App, deleted.Revision, repo.Head())
	}
	reconciletest.Eventually(t, "Pruned event", func() (bool, string) { return hasEvent(t, inv.Namespace(), "Pruned", ref("Secret", "creds")) })
	got := status().LastPrune
	if got == nil {
		t.Fatal("lastPrune after a prune that deleted: none")
	}
	if diff := cmp.Diff(daemon.PruneStatus{Time: got.Time, Revision: repo.Head(), Deleted: 1}, *got); diff != "" || got.Time.IsZero() {
		t.Errorf("lastPrune after a prune that deleted (-want +got):\n%s", diff)
	}

	// 2 of the 4 remaining leave Git: 50%, over the budget.
	repo.Commit("drop a and b", map[string]string{"app/a.yaml": "", "app/b.yaml": ""})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	refused := pruneAlert(0, "refused")
	if diff := cmp.Diff(map[string]string{ref("ConfigMap", "a"): "refused", ref("ConfigMap", "b"): "refused"}, classes(refused)); diff != "" {
		t.Errorf("refused prune alert fields (-want +got):\n%s", diff)
	}
	if !strings.Contains(refused.Summary, "guard budget") || !strings.Contains(refused.Summary, "prune budget of 25%") {
		t.Errorf("refused prune alert summary = %q, want the guard and the budget", refused.Summary)
	}
	reconciletest.Eventually(t, "PruneRefused event", func() (bool, string) {
		return hasEvent(t, inv.Namespace(), "PruneRefused", "2 object(s) that left Git stay (guard budget): not pruning: it would delete 2 of the app's 4 objects")
	})
	reconciletest.Eventually(t, "lastPrune refused", func() (bool, string) {
		lp := status().LastPrune
		return lp != nil && lp.Refused && lp.Revision == repo.Head(), fmt.Sprintf("%+v", lp)
	})
	got = status().LastPrune
	want := daemon.PruneStatus{Time: got.Time, Revision: repo.Head(), Spared: 2, Refused: true, Reason: "budget", Message: got.Message}
	if diff := cmp.Diff(want, *got); diff != "" || !strings.Contains(got.Message, "more than the prune budget of 25%") {
		t.Errorf("lastPrune after a refused prune (-want +got):\n%s\nmessage: %q", diff, got.Message)
	}
	for _, n := range []string{"a", "b"} {
		if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), n, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s after a refused prune: %v", n, err)
		}
	}

	// The pruned Secret's value is in no output.
	payloads, _ := json.Marshal(h.alerts())
	statusJSON, _ := json.Marshal(d.Status())
	events, err := env.Clientset(t).CoreV1().Events(inv.Namespace()).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	eventsJSON, _ := json.Marshal(events.Items)
	for what, out := range map[string]string{"alerts": string(payloads), "status": string(statusJSON), "events": string(eventsJSON), "logs": logs.String()} {
		if strings.Contains(out, prunedSecretValue) {
			t.Errorf("%s show the pruned Secret's value", what)
		}
	}
}

// converged reports whether an app reconciled sha successfully.
func converged(s daemon.AppStatus, sha string) (bool, string) {
	return s.Result == "ok" && s.Revision == sha, fmt.Sprintf("%+v", s)
}
