package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestApplyAdmissionDenied: `syncd apply --config` prints an admission
// policy's denial verbatim under the object's name, applies the rest, and
// exits 1.
func TestApplyAdmissionDenied(t *testing.T) {
	ctx := context.Background()
	ns := env.Namespace(t)
	cs := env.Clientset(t)
	const deny = "ConfigMaps may not carry the key forbidden (team policy P-12)"
	fail := admissionv1.Fail
	forbidden := metav1.StatusReasonForbidden
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy: &fail,
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{{
				RuleWithOperations: admissionv1.RuleWithOperations{
					Operations: []admissionv1.OperationType{admissionv1.Create, admissionv1.Update},
					Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
				},
			}}},
			Validations: []admissionv1.Validation{{Expression: "!has(object.data) || !('forbidden' in object.data)", Message: deny, Reason: &forbidden}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "deny-" + ns},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        policy.Name,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	})
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	// Wait until the server enforces the policy, and keep its message.
	var message string
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "denied", Namespace: ns}, Data: map[string]string{"forbidden": "x"}}
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		var status apierrors.APIStatus
		if err == nil || !errors.As(err, &status) || !strings.Contains(status.Status().Message, deny) {
			return false, nil
		}
		message = status.Status().Message
		return true, nil
	})
	if err != nil {
		t.Fatalf("the admission policy never denied a ConfigMap in %s: %v", ns, err)
	}

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
		"ConfigMap " + ns + "/fine created",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q", want)
		}
	}
	if strings.Contains(r.stdout, "grant the identity") {
		t.Errorf("the admission denial is described as missing RBAC")
	}
}
