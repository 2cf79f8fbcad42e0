package reconcile_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestPreviewImpersonation: Runner.Preview dry-runs as the app's service
// account, as Apply applies: an object outside its RBAC is an error in
// the report naming the account, the other would be created with the
// app's ApplySet label. Nothing is written, and a first preview says the
// app has no inventory yet.
func TestPreviewImpersonation(t *testing.T) {
	ctx := context.Background()
	tn := reconciletest.NewTenant(t, env, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch"}})
	denied := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("two namespaces", map[string]string{
		"app/ok.yaml":     reconciletest.ConfigMap(tn.NS, "blue"),
		"app/denied.yaml": reconciletest.ConfigMap(denied, "blue"),
	})
	rep, _, err := tenantRunner(t, tn).Preview(ctx, tenantApp(tn), repo.Dir+"/app")
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]preview.Action{}
	for _, o := range rep.Objects {
		got[o.Object.Namespace] = o.Action
		switch o.Object.Namespace {
		case denied:
			if !strings.Contains(o.Error, "forbidden") || !strings.Contains(o.Error, tn.User()) {
				t.Errorf("denied object's error does not say the service account was forbidden: %q", o.Error)
			}
		case tn.NS:
			if want := inventory.LabelPartOf + ": " + tn.Inventory.ID("tenant"); !strings.Contains(o.Diff, want) {
				t.Errorf("allowed object's diff does not add %q:\n%s", want, o.Diff)
			}
		}
	}
	want := map[string]preview.Action{tn.NS: preview.Create, denied: preview.Error}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions by namespace (-want +got):\n%s", diff)
	}
	if len(rep.Notes) == 0 || !strings.Contains(rep.Notes[0], "has no inventory") {
		t.Errorf("notes %q, want the first to say the app has no inventory", rep.Notes)
	}
	for _, ns := range []string{tn.NS, denied} {
		if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("ConfigMap %s/settings: %v, want NotFound: a preview writes nothing", ns, err)
		}
	}
}
