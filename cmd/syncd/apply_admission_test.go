package main

import (
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestApplyAdmissionDenied: `syncd apply --config` prints an admission
// policy's denial verbatim under the object's name, writes nothing else of
// the stage (its dry run found the denial first), and exits 1.
func TestApplyAdmissionDenied(t *testing.T) {
	ns := env.Namespace(t)
	forbidden := metav1.StatusReasonForbidden
	message := env.DenyForbiddenKey(t, ns, "denied", &forbidden)

	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir := writeFiles(t, map[string]string{
		"denied.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: denied\ndata:\n  forbidden: x\n",
		"fine.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\ndata:\n  k: v\n",
	})
	r := syncd(t, "apply", "--config", cfg, "--path", dir)
	t.Logf("output:\n%s%s", r.stdout, r.stderr)
	if r.code != exitError {
		t.Fatalf("code %d, want %d", r.code, exitError)
	}
	for _, want := range []string{
		"ConfigMap " + ns + "/denied failed",
		"  error: ConfigMap " + ns + "/denied: ",
		message,
		"ConfigMap " + ns + "/fine skipped",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "grant the identity") {
		t.Errorf("the admission denial is described as missing RBAC")
	}
}
