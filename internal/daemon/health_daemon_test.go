package daemon_test

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonUnhealthy: an app with wait: true whose Deployment cannot
// become Current (the test control plane has no scheduler or kubelet)
// reconciles to result "unhealthy" with the object and kstatus's reason,
// not "ok".
func TestDaemonUnhealthy(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/web.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s}
spec:
  replicas: 1
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - {name: app, image: nginx:1.27}
`, ns)})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, "  wait: true\n  timeout: 2s\n")
	d := runDaemon(t, cfgPath, cluster(t), reconcile.Options{})
	reconciletest.Eventually(t, "result unhealthy", func() (bool, string) {
		st := d.Status()
		if len(st) != 1 {
			return false, fmt.Sprint(st)
		}
		s := st[0]
		return s.Result == "unhealthy" && strings.Contains(s.Error, "apps/Deployment "+ns+"/web InProgress"), fmt.Sprintf("%+v", s)
	})
}
