package e2e

import (
	"fmt"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// appAlertNS is the team namespace of the App alert journey.
const appAlertNS = "team-alerts"

// TestJourneyAppAlert: a team declares, with kubectl, a GitSource and an
// App, and routes the App's drift to its own signed webhook with an
// AlertProvider (address and HMAC key in a Secret) and an Alert; `syncd
// run` without --config runs them. A kubectl patch of the App's
// ConfigMap reaches the receiver on loopback as a drift alert naming the
// culprit (kubectl-patch), and, once the App takes the field back, as
// resolved. No secret is printed, logged or sent in clear.
func TestJourneyAppAlert(t *testing.T) {
	w, step := newWorkspace(t), stepper(t)
	newCluster(t)
	rcv := startReceiver(t)
	rcv.requireCheck(checkSignedAlert)
	repo := gitserver.StartTest(t).NewTestRepo(t, "team-alerts-deploy")
	if _, err := repo.Commit("web 1.0.0", teamRepo("1.0.0")); err != nil {
		t.Fatal(err)
	}
	d := w.startDaemon()
	declareAppAlert(t, w, repo.URL, rcv.url+"?token="+alertURLToken)
	mustKubectl(t, "-n", appAlertNS, "wait", "--for=condition=Ready", "app/web", "alertprovider/oncall", "alert/web-drift", "--timeout=120s")
	step("declare App, AlertProvider, Alert: Ready")

	mustKubectl(t, "-n", appAlertNS, "patch", "configmap/web-settings", "--type=merge", "-p", `{"data":{"LOG_LEVEL":"debug"}}`)
	open := rcv.waitFor(t, func(a alert) bool { return a.Type == "drift" && a.State == "open" })
	if open.App != appAlertNS+"/web" || open.Object.Kind != "ConfigMap" || open.Object.Name != "web-settings" {
		t.Errorf("drift alert names app %q, object %+v; want %s/web, ConfigMap web-settings", open.App, open.Object, appAlertNS)
	}
	if len(open.Fields) == 0 || open.Fields[0].Culprit == nil || open.Fields[0].Culprit.Manager != "kubectl-patch" {
		t.Errorf("drift alert fields %+v; want the culprit kubectl-patch", open.Fields)
	}
	step("kubectl patch: drift alert with the culprit")

	rcv.waitFor(t, func(a alert) bool {
		return a.Type == "drift" && a.State == "resolved" && a.Fingerprint == open.Fingerprint
	})
	step("taken back: resolved alert")

	// Deleted while syncd runs, so its prune ends (the finalizer).
	mustKubectl(t, "-n", appAlertNS, "delete", "app/web", "--timeout=60s")
	d.stop()
	w.record(rcv.bodies()...)
	if r := rcv.refusals(); len(r) > 0 {
		t.Errorf("the receiver refused requests: %q", r)
	}
	w.checkNoSecrets(alertHMACKey, alertURLToken)
}

// declareAppAlert creates the namespace, the provider's Secret (from
// files: no value on a command line), the GitSource, the App (forcing
// hand edits back, checked every 5s), the AlertProvider and the Alert,
// as docs/alerts.md shows, and deletes them at cleanup.
func declareAppAlert(t *testing.T, w *workspace, repoURL, address string) {
	ensureNamespace(t, appAlertNS)
	addressFile := w.file("oncall-address", address)
	keyFile := w.file("oncall-hmac", alertHMACKey)
	mustKubectl(t, "-n", appAlertNS, "create", "secret", "generic", "oncall", "--from-file=address="+addressFile, "--from-file=hmacKey="+keyFile)
	manifest := w.file("team-alerts.yaml", fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata: {name: deploy}
spec: {url: %s, branch: main, interval: 5s}
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata: {name: web, labels: {team: alerts}}
spec:
  sourceRef: {kind: GitSource, name: deploy}
  path: apps/web
  conflicts: {default: force}
---
apiVersion: syncd.dev/v1alpha1
kind: AlertProvider
metadata: {name: oncall}
spec: {type: webhook, secretRef: {name: oncall}}
---
apiVersion: syncd.dev/v1alpha1
kind: Alert
metadata: {name: web-drift}
spec:
  providerRef: {name: oncall}
  eventSources: [{matchLabels: {team: alerts}}]
  events: [drift]
`, repoURL))
	mustKubectl(t, "-n", appAlertNS, "apply", "-f", manifest)
	t.Cleanup(func() {
		if _, err := kubectl("-n", appAlertNS, "delete", "app/web", "--ignore-not-found", "--timeout=60s"); err != nil {
			_, _ = kubectl("-n", appAlertNS, "patch", "app/web", "--type=merge", "-p", `{"metadata":{"finalizers":null}}`)
		}
		_, _ = kubectl("-n", appAlertNS, "delete", "alert/web-drift", "alertprovider/oncall", "gitsource/deploy", "secret/oncall", "--ignore-not-found")
	})
}
