package e2e

import (
	"strings"
	"testing"
)

// guardWebhook is an admission webhook for ConfigMaps in namespaces
// labelled e2e-guard=on, served by a Service with no endpoints: the shape
// of an ingress controller's or a cert manager's install before its pods
// run.
const guardWebhook = `apiVersion: v1
kind: Namespace
metadata:
  name: hooked
  labels: {e2e-guard: "on"}
---
apiVersion: v1
kind: Service
metadata: {name: guard, namespace: hooked}
spec:
  ports: [{port: 443, targetPort: 8443}]
---
apiVersion: admissionregistration.k8s.io/v1
kind: ValidatingWebhookConfiguration
metadata: {name: e2e-guard}
webhooks:
  - name: guard.e2e.syncd.dev
    admissionReviewVersions: [v1]
    sideEffects: None
    failurePolicy: Fail
    namespaceSelector: {matchLabels: {e2e-guard: "on"}}
    rules:
      - apiGroups: [""]
        apiVersions: [v1]
        operations: [CREATE, UPDATE]
        resources: [configmaps]
    clientConfig:
      service: {name: guard, namespace: hooked, path: /validate}
`

// TestWebhookWithoutEndpoints: with the control plane's aggregator
// routing, a webhook whose Service has no endpoints fails at once
// (never a dial to a ClusterIP off the machine), and syncd apply names
// the webhook instead of telling the user to fix the object in Git.
func TestWebhookWithoutEndpoints(t *testing.T) {
	w := newWorkspace(t)
	if out, err := kubectl("apply", "-f", w.file("guard.yaml", guardWebhook)); err != nil {
		t.Fatalf("kubectl apply: %v\n%s", err, out)
	}
	t.Cleanup(func() { _, _ = kubectl("delete", "validatingwebhookconfiguration", "e2e-guard", "--ignore-not-found") })
	w.file("app/settings.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {mode: strict}\n")

	r := w.must(exitError, "apply", "--path", w.dir+"/app", "--manager", "e2e-hooked", "--namespace", "hooked")
	out := r.stdout + r.stderr
	for _, want := range []string{
		`no endpoints available for service "guard"`,
		`the admission webhook "guard.e2e.syncd.dev" could not be called`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("apply does not say %q\n%s", want, r)
		}
	}
	if strings.Contains(out, "fix the object in Git") {
		t.Errorf("apply blames the object for a webhook that could not be called\n%s", r)
	}
}
