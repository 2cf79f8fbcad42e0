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
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// alertsFor is the alert section of a config sending events to h.
func (h *hook) alertsFor(events ...string) string {
	return fmt.Sprintf("alerts:\n- name: hook\n  type: webhook\n  urlFile: %s\n  hmacKeyFile: %s\n  events: [%s]\n",
		filepath.Join(h.dir, "url"), filepath.Join(h.dir, "key"), strings.Join(events, ", "))
}

// waitAlert waits for an alert matching match from index from on and
// returns it with the index after it.
func (h *hook) waitAlert(t *testing.T, what string, from int, match func(alert.WebhookPayload) bool) (alert.WebhookPayload, int) {
	t.Helper()
	var at int
	reconciletest.Eventually(t, what, func() (bool, string) {
		i, ok := h.find(from, match)
		at = i
		return ok, fmt.Sprintf("alerts=%+v", h.alerts())
	})
	return h.alerts()[at], at + 1
}

// count is how many alerts match.
func (h *hook) count(match func(alert.WebhookPayload) bool) int {
	n := 0
	for _, p := range h.alerts() {
		if match(p) {
			n++
		}
	}
	return n
}

func opened(typ string) func(alert.WebhookPayload) bool {
	return func(p alert.WebhookPayload) bool { return p.Type == typ && p.State == "open" }
}

func resolvedAs(fingerprint string) func(alert.WebhookPayload) bool {
	return func(p alert.WebhookPayload) bool { return p.State == "resolved" && p.Fingerprint == fingerprint }
}

// TestDaemonSourceFailureAlerts: an unreachable Git source sends each of
// its apps one error alert naming the source, the kind of failure and
// that the last good revision stays, however many polls fail; the first
// poll that answers resolves it.
func TestDaemonSourceFailureAlerts(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, h.alertsFor("error"))
	d := runDaemon(t, cfgPath, cluster(t), reconcile.Options{})

	off := repo.Dir + ".off"
	if err := os.Rename(repo.Dir, off); err != nil {
		t.Fatal(err)
	}
	for i := 1; i <= 2; i++ {
		if err := d.Trigger("repo"); err != nil {
			t.Fatal(err)
		}
		reconciletest.Eventually(t, fmt.Sprintf("failed poll %d in /status", i), func() (bool, string) {
			st := d.Status()
			return len(st) == 1 && st[0].SourceFailures == i, fmt.Sprintf("%+v", st)
		})
	}
	p, _ := h.waitAlert(t, "source error alerted", 0, opened("error"))
	for _, want := range []string{`source "repo"`, "RepositoryNotFound", "the last good revision stays applied"} {
		if !strings.Contains(p.Summary, want) {
			t.Errorf("error alert summary %q does not say %q", p.Summary, want)
		}
	}
	if p.App != "web" {
		t.Errorf("error alert of app %q, want web", p.App)
	}

	if err := os.Rename(off, repo.Dir); err != nil {
		t.Fatal(err)
	}
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	r, _ := h.waitAlert(t, "source error resolved", 0, resolvedAs(p.Fingerprint))
	if !strings.Contains(r.Summary, "source repo answers again") {
		t.Errorf("resolved summary %q, want it to say the source answers again", r.Summary)
	}
	if n := h.count(opened("error")); n != 1 {
		t.Errorf("%d error alerts for one outage of two failed polls, want 1: %+v", n, h.alerts())
	}
}

// TestDaemonNewErrorAlerted: a commit that fails for another reason than
// the open error is alerted, and the stale alert is resolved as
// superseded; a retry of the same failure is not alerted again; the fix
// resolves the current one.
func TestDaemonNewErrorAlerted(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, h.alertsFor("error"))
	d := runDaemon(t, cfgPath, cluster(t), reconcile.Options{})
	trigger := func() {
		t.Helper()
		if err := d.Trigger("repo"); err != nil {
			t.Fatal(err)
		}
	}

	repo.Commit("broken yaml", map[string]string{"app/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: [oops\n"})
	trigger()
	first, next := h.waitAlert(t, "first error alerted", 0, opened("error"))
	trigger() // the same failure at the same revision: no new alert
	repo.Commit("missing file", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue"), "app/kustomization.yaml": "resources: [cm.yaml, missing.yaml]\n"})
	sha2 := repo.Head()
	trigger()
	second, _ := h.waitAlert(t, "the new error alerted", next, opened("error"))
	if second.Fingerprint == first.Fingerprint || second.Revision != sha2 || !strings.Contains(second.Summary, "missing.yaml") {
		t.Errorf("new error alert = %+v, want a new fingerprint at %s naming missing.yaml (first: %+v)", second, sha2, first)
	}
	stale, _ := h.waitAlert(t, "the first error resolved as superseded", next, resolvedAs(first.Fingerprint))
	if !strings.Contains(stale.Summary, "superseded") {
		t.Errorf("resolution of the stale error says %q, want superseded", stale.Summary)
	}
	if n := h.count(opened("error")); n != 2 {
		t.Errorf("%d open error alerts, want 2: %+v", n, h.alerts())
	}

	repo.Commit("fixed", map[string]string{"app/kustomization.yaml": "resources: [cm.yaml]\n"})
	trigger()
	h.waitAlert(t, "the fix resolves the current error", 0, resolvedAs(second.Fingerprint))
}

// TestDaemonReloadResolvesAlerts: the documented fix of a conflict, a
// yield rule added to syncd.yaml, resolves the conflict and error
// alerts opened under the old config; an app removed from the config
// has its open alerts resolved.
func TestDaemonReloadResolvesAlerts(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{
		"app/cm.yaml":   reconciletest.ConfigMap(ns, "blue"),
		"other/cm.yaml": reconciletest.NamedConfigMap(ns, "other", "blue"),
	})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	config := func(rules string, withOther bool) string {
		cfg := fmt.Sprintf("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: file://%s\n    branch: main\n    interval: 1h\napps:\n"+
			"- name: web\n  source: repo\n  path: app\n  namespace: %s\n  conflicts:\n    default: fail\n%s", repo.Dir, ns, rules)
		if withOther {
			cfg += fmt.Sprintf("- name: other\n  source: repo\n  path: other\n  namespace: %s\n", ns)
		}
		return cfg + h.alertsFor("conflict", "error")
	}
	if err := os.WriteFile(cfgPath, []byte(config("", true)), 0o644); err != nil {
		t.Fatal(err)
	}
	d := startDaemon(t, daemon.Options{ConfigPath: cfgPath, Cluster: cluster(t), MaxBackoff: time.Hour, ConfigCheck: 200 * time.Millisecond})

	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "settings", types.ApplyPatchType,
		[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"red"}}`), metav1.PatchOptions{FieldManager: "ops", Force: ptrTo(true)})
	if err != nil {
		t.Fatal(err)
	}
	repo.Commit("other breaks", map[string]string{"other/cm.yaml": "kind: [oops\n"})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	conflict, _ := h.waitAlert(t, "conflict alerted", 0, opened("conflict"))
	webErr, _ := h.waitAlert(t, "web's error alerted", 0, func(p alert.WebhookPayload) bool { return opened("error")(p) && p.App == "web" })
	otherErr, _ := h.waitAlert(t, "other's error alerted", 0, func(p alert.WebhookPayload) bool { return opened("error")(p) && p.App == "other" })

	rules := "    rules:\n    - managers: [ops]\n      action: yield\n"
	if err := os.WriteFile(cfgPath, []byte(config(rules, false)), 0o644); err != nil {
		t.Fatal(err)
	}
	for what, fp := range map[string]string{"conflict": conflict.Fingerprint, "web's error": webErr.Fingerprint, "removed app's error": otherErr.Fingerprint} {
		h.waitAlert(t, what+" resolved after the config edit", 0, resolvedAs(fp))
	}
	if n := h.count(func(p alert.WebhookPayload) bool { return p.State == "resolved" }); n != 3 {
		t.Errorf("%d resolved alerts, want 3: %+v", n, h.alerts())
	}
}

func ptrTo[T any](v T) *T { return &v }
