package daemon_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	rbacv1 "k8s.io/api/rbac/v1"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestTenantDriftWatch: the daemon's drift watch of a tenant app lists
// and watches as its service account. The account may not watch
// ConfigMaps: the error is logged for that app as the account, not
// served by syncd's own identity.
func TestTenantDriftWatch(t *testing.T) {
	tn := reconciletest.NewTenant(t, env, rbacv1.PolicyRule{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "create", "patch"}})
	repo := reconciletest.NewRepo(t)
	repo.Commit("one", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(tn.NS, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: file://%s
    branch: main
    interval: 1h
apps:
- name: tenant
  source: repo
  path: app
  namespace: %s
  serviceAccountName: %s
`, repo.Dir, tn.NS, tn.SA)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	d, logs := runLoggedDaemon(t, cfgPath, tn.Cluster, reconcile.Options{Inventory: tn.Inventory}, nil)
	reconciletest.Eventually(t, "tenant app applied", func() (bool, string) {
		st := d.Status()
		return len(st) == 1 && st[0].Result == "ok", fmt.Sprintf("%+v", st)
	})
	reconciletest.Eventually(t, "watch error logged for the tenant", func() (bool, string) {
		for _, line := range strings.Split(logs.String(), "\n") {
			if strings.Contains(line, `msg="drift watch"`) && strings.Contains(line, "app=tenant") &&
				strings.Contains(line, "as="+tn.User()) && strings.Contains(line, "forbidden") &&
				strings.Contains(line, `cannot watch resource \"configmaps\"`) {
				return true, ""
			}
		}
		return false, logs.String()
	})
}
