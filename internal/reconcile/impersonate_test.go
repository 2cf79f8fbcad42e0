package reconcile_test

import (
	"context"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
)

// TestImpersonation: an app with serviceAccountName runs as that account;
// an object outside its RBAC fails with Forbidden, the others apply.
func TestImpersonation(t *testing.T) {
	ctx := context.Background()
	allowed, denied := env.Namespace(t), env.Namespace(t)
	if _, err := env.ServiceAccountConfig(ctx, allowed, "deployer"); err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, allowed, "deployer", allowed, []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch"},
	}}); err != nil {
		t.Fatal(err)
	}
	repo := newRepo(t)
	repo.commit("two namespaces", map[string]string{
		"app/ok.yaml":     configMap(allowed, "blue"),
		"app/denied.yaml": configMap(denied, "blue"),
	})
	cl := cluster(t)
	cl.Config = env.Config
	cfg := &config.Config{APIVersion: config.APIVersion, Kind: config.Kind, File: "test"}
	app := config.App{Name: "tenant", Source: "repo", Path: "app", Namespace: allowed, ServiceAccountName: "deployer"}
	cfg.Apps = []config.App{app}
	runner, err := reconcile.New(cfg, cl, reconcile.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	_, cs, err := runner.Apply(ctx, app, repo.dir+"/app", false)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]applier.Action{}
	for _, c := range cs.Changes {
		got[c.Object.Namespace] = c.Action
		if c.Object.Namespace == denied && (c.Err == nil || !strings.Contains(c.Err.Error(), "forbidden") || !strings.Contains(c.Err.Error(), "system:serviceaccount:"+allowed+":deployer")) {
			t.Errorf("denied object's error does not say the service account was forbidden: %v", c.Err)
		}
	}
	if got[allowed] != applier.Created || got[denied] != applier.Failed {
		t.Fatalf("actions by namespace = %v, want %s created and %s failed", got, allowed, denied)
	}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(denied).Get(ctx, "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("the object outside the account's RBAC exists (get error %v)", err)
	}
}
