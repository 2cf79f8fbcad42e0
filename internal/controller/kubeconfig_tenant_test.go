package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
)

// TestKubeconfigReadAsServiceAccount: an App with serviceAccountName
// reads the kubeconfig Secret of its spec.cluster as that account (the
// "remote" cluster is the test's own API server, reached through the
// kubeconfig). An account that may not read the Secret gets the App
// refused (SecretNotFound) naming the account, the Secret and what to
// grant, never the kubeconfig's content, and nothing is applied or
// written on the cluster; granted, the App applies. Deleted while the
// grant is taken back, the App stays with its finalizer, its objects
// are not pruned, and its status and a Warning Event say why and what
// to do; granted again, the prune runs and the App goes.
func TestKubeconfigReadAsServiceAccount(t *testing.T) {
	local, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	remoteInv := env.Namespace(t)
	targets := reconcile.NewTargets(reconcile.TargetsOptions{Local: local, LocalConfig: env.Config, Inventory: &inventory.Options{Namespace: remoteInv, SyncTimeout: 5 * time.Second}, ProbeTimeout: 2 * time.Second})
	t.Cleanup(targets.Close)
	r := newRigWith(t, "1h", Options{Runner: reconcile.Options{Targets: targets}})
	ctx := context.Background()
	err = env.Grant(ctx, r.ns, "deployer", r.ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}}})
	if err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	r.kubeconfigSecret("cluster-kubeconfig", string(kubeconfig))
	r.app("web", "web", fmt.Sprintf(", serviceAccountName: deployer, cluster: {name: remote, context: testenv, inventoryNamespace: %s, kubeConfig: {secretRef: {name: cluster-kubeconfig}}}", remoteInv))

	account := "system:serviceaccount:" + r.ns + ":deployer"
	token := env.Config.BearerToken
	// refusedSaying waits until the App is SecretNotFound saying each
	// of says (and never the kubeconfig's token), and returns it.
	refusedSaying := func(what string, says ...string) *v1alpha1.App {
		t.Helper()
		app := r.waitApp("web", what, func(a *v1alpha1.App) bool {
			c := ready(a)
			return c != nil && c.Status == metav1.ConditionFalse && c.Reason == string(v1alpha1.ReasonSecretNotFound)
		})
		c := ready(app)
		for _, s := range says {
			if !strings.Contains(c.Message, s) {
				t.Errorf("%s: Ready = %s: %s; want it to say %q", what, c.Reason, c.Message, s)
			}
		}
		if strings.Contains(c.Message, token) {
			t.Errorf("%s: Ready carries the kubeconfig's token: %s", what, c.Message)
		}
		return app
	}
	refusal := []string{"Secret " + r.ns + "/cluster-kubeconfig", "cannot be read as " + account, "grant it get on Secret cluster-kubeconfig"}
	refusedSaying("refused", refusal...)
	r.checkEventsWithout("web", token)
	if v, err := r.configMapValue("web"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap web = %q, %v; want it not applied while the App's account may not read its kubeconfig", v, err)
	}
	if secrets, err := env.Clientset(t).CoreV1().Secrets(remoteInv).List(ctx, metav1.ListOptions{}); err != nil || len(secrets.Items) > 0 {
		t.Errorf("Secrets in the cluster's inventory namespace %s: %d (%v); want none written", remoteInv, len(secrets.Items), err)
	}

	revoke := r.grantSecret("deployer", "cluster-kubeconfig")
	r.patchApp("web", `{"metadata":{"annotations":{"`+v1alpha1.RequestedAtAnnotation+`":"granted"}}}`)
	r.waitReady("web", r.sha)
	if v, err := r.configMapValue("web"); err != nil || v != "1" {
		t.Fatalf("ConfigMap web after the grant = %q, %v; want 1", v, err)
	}

	revoke()
	if err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	app := refusedSaying("deleted, its prune refused", append(refusal, "the App stays, with its finalizer "+v1alpha1.Finalizer, "remove the finalizer")...)
	if app.DeletionTimestamp == nil {
		t.Errorf("App web has no deletionTimestamp; want it deleted and kept by its finalizer")
	}
	r.waitEvent("web", string(v1alpha1.ReasonSecretNotFound), "remove the finalizer")
	if v, err := r.configMapValue("web"); err != nil || v != "1" {
		t.Errorf("ConfigMap web while the deleted App's account may not read its kubeconfig = %q, %v; want it kept (1)", v, err)
	}

	r.grantSecret("deployer", "cluster-kubeconfig")
	// A change of the Secret retries the prune at once (the grant itself
	// is seen at the next retry of the backoff).
	patch := []byte(`{"metadata":{"annotations":{"touched":"after-the-grant"}}}`)
	if _, err := env.Clientset(t).CoreV1().Secrets(r.ns).Patch(ctx, "cluster-kubeconfig", "application/merge-patch+json", patch, metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "App web gone", func() (bool, string) {
		_, _, err := r.get("web")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if v, err := r.configMapValue("web"); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap web after the deleted App's prune = %q, %v; want it pruned", v, err)
	}
}
