package testenv

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// DenyMessage is what DenyForbiddenKey's policy says when it denies a
// ConfigMap.
const DenyMessage = "ConfigMaps may not carry the key forbidden (team policy P-12)"

// DenyForbiddenKey installs a ValidatingAdmissionPolicy and its binding
// that deny, in ns only, ConfigMaps with a data key "forbidden", and waits
// until the API server enforces it. reason is the status reason of the
// denial (nil: the server's default, Invalid). It returns the server's
// message for a denied ConfigMap named name.
func (e *Env) DenyForbiddenKey(t testing.TB, ns, name string, reason *metav1.StatusReason) string {
	t.Helper()
	ctx := context.Background()
	cs := e.Clientset(t)
	fail := admissionv1.Fail
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
			Validations: []admissionv1.Validation{{
				Expression: "!has(object.data) || !('forbidden' in object.data)",
				Message:    DenyMessage,
				Reason:     reason,
			}},
		},
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicies().Delete(context.Background(), policy.Name, metav1.DeleteOptions{})
	})
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
	if _, err := cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		_ = cs.AdmissionregistrationV1().ValidatingAdmissionPolicyBindings().Delete(context.Background(), binding.Name, metav1.DeleteOptions{})
	})
	// The policy takes effect once the server has compiled it: probe with
	// a dry-run create until it is denied.
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Data: map[string]string{"forbidden": "x"}}
	var message string
	err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if err == nil {
			return false, nil
		}
		if !strings.Contains(err.Error(), DenyMessage) {
			return false, err
		}
		var status apierrors.APIStatus
		if !errors.As(err, &status) {
			return false, err
		}
		message = status.Status().Message
		return true, nil
	})
	if err != nil {
		t.Fatalf("the admission policy never denied a ConfigMap in %s: %v", ns, err)
	}
	return message
}
