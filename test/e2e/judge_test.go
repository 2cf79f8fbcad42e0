package e2e

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/common/expfmt"
	"github.com/prometheus/common/model"
	admissionv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyLargeFirstSyncJudgesConfigMaps: the built binary's first
// sync of 40 new ConfigMaps. While an admission policy refuses one of
// them, syncd sees the policy, dry-runs every ConfigMap and refuses the
// stage before writing anything, naming the refused one; once the policy
// is gone, the first sync creates all 40 with 16 dry runs (the rest are
// judged without one), and with dryRunAll with 40.
func TestJourneyLargeFirstSyncJudgesConfigMaps(t *testing.T) {
	w := newWorkspace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "judged")
	files := map[string][]byte{}
	for i := range 40 {
		files[fmt.Sprintf("app/cm-%d.yaml", i)] = fmt.Appendf(nil, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d, labels: {tier: web}}\ndata: {key: v%d}\n", i, i)
	}
	if _, err := repo.Commit("forty maps", files); err != nil {
		t.Fatal(err)
	}
	config := func(ns string, dryRunAll bool) {
		w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: judged
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: judged-%s
    source: judged
    path: app
    namespace: %s
    dryRunAll: %t
`, repo.URL, ns, ns, dryRunAll))
	}

	refused := "judged-refused"
	ensureNamespace(t, refused)
	removePolicy := refuseConfigMap(t, refused, "cm-37")
	config(refused, false)
	before := configMapDryRuns(t)
	r := w.must(1, "apply", "--config", w.config, "--cache-dir", w.cache)
	for _, want := range []string{"ConfigMap " + refused + "/cm-37 failed", "refused by the journey's policy", "nothing of stage namespaced or of later stages was applied"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q\n%s", want, r)
		}
	}
	if got := configMapDryRuns(t) - before; got != 40 {
		t.Errorf("%v dry runs of ConfigMaps while a policy sees them, want 40", got)
	}
	list, err := clientset(t).CoreV1().ConfigMaps(refused).List(context.Background(), metav1.ListOptions{LabelSelector: "tier=web"})
	if err != nil {
		t.Fatal(err)
	}
	if len(list.Items) != 0 {
		t.Errorf("%d ConfigMaps written by a refused stage, want none", len(list.Items))
	}
	removePolicy()

	for _, tc := range []struct {
		ns        string
		dryRunAll bool
		want      float64
	}{{"judged-local", false, 16}, {"judged-dry-run-all", true, 40}} {
		ensureNamespace(t, tc.ns)
		config(tc.ns, tc.dryRunAll)
		before := configMapDryRuns(t)
		w.must(0, "apply", "--config", w.config, "--cache-dir", w.cache)
		if got := configMapDryRuns(t) - before; got != tc.want {
			t.Errorf("dryRunAll %v: %v dry runs of ConfigMaps, want %v", tc.dryRunAll, got, tc.want)
		}
		list, err := clientset(t).CoreV1().ConfigMaps(tc.ns).List(context.Background(), metav1.ListOptions{LabelSelector: "tier=web"})
		if err != nil {
			t.Fatal(err)
		}
		if len(list.Items) != 40 {
			t.Errorf("dryRunAll %v: %d ConfigMaps created, want 40", tc.dryRunAll, len(list.Items))
		}
	}
}

// configMapDryRuns is the API server's count of dry-run requests on
// ConfigMaps so far (apiserver_request_total).
func configMapDryRuns(t *testing.T) float64 {
	t.Helper()
	body, err := clientset(t).CoreV1().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	parser := expfmt.NewTextParser(model.UTF8Validation)
	families, err := parser.TextToMetricFamilies(bytes.NewReader(body))
	if err != nil {
		t.Fatalf("API server /metrics: %v", err)
	}
	return value(families, "apiserver_request_total", map[string]string{"resource": "configmaps", "dry_run": "All"})
}

// refuseConfigMap makes a validating admission policy refuse the
// ConfigMap name in namespace ns, waits until it does, and returns the
// function that removes the policy (called at the test's end too).
func refuseConfigMap(t *testing.T, ns, name string) func() {
	t.Helper()
	cs := clientset(t)
	ctx := context.Background()
	rule := admissionv1.NamedRuleWithOperations{RuleWithOperations: admissionv1.RuleWithOperations{
		Operations: []admissionv1.OperationType{admissionv1.Create},
		Rule:       admissionv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
	}}
	policy := &admissionv1.ValidatingAdmissionPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionv1.ValidatingAdmissionPolicySpec{
			FailurePolicy:    ptr.To(admissionv1.Fail),
			MatchConstraints: &admissionv1.MatchResources{ResourceRules: []admissionv1.NamedRuleWithOperations{rule}},
			Validations:      []admissionv1.Validation{{Expression: fmt.Sprintf("object.metadata.name != %q", name), Message: "refused by the journey's policy"}},
		},
	}
	binding := &admissionv1.ValidatingAdmissionPolicyBinding{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec: admissionv1.ValidatingAdmissionPolicyBindingSpec{
			PolicyName:        ns,
			ValidationActions: []admissionv1.ValidationAction{admissionv1.Deny},
			MatchResources: &admissionv1.MatchResources{NamespaceSelector: &metav1.LabelSelector{
				MatchLabels: map[string]string{"kubernetes.io/metadata.name": ns},
			}},
		},
	}
	vap := cs.AdmissionregistrationV1()
	if _, err := vap.ValidatingAdmissionPolicies().Create(ctx, policy, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	remove := func() {
		_ = vap.ValidatingAdmissionPolicyBindings().Delete(ctx, ns, metav1.DeleteOptions{})
		_ = vap.ValidatingAdmissionPolicies().Delete(ctx, ns, metav1.DeleteOptions{})
	}
	t.Cleanup(remove)
	if _, err := vap.ValidatingAdmissionPolicyBindings().Create(ctx, binding, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	probe := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: name}}
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(100 * time.Millisecond) {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, probe, metav1.CreateOptions{DryRun: []string{metav1.DryRunAll}})
		if apierrors.IsInvalid(err) || apierrors.IsForbidden(err) {
			return remove
		}
		if time.Now().After(deadline) {
			t.Fatalf("the policy does not refuse %s after 30s: %v", name, err)
		}
	}
}
