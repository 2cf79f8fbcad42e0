package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv"
)

// TestDaemonNoFalseDrift: the daemon syncs the stack and its drift
// watcher alerts nothing for it (zero values, quantities, defaults, the
// Lease's time in UTC), then alerts exactly the Update another manager
// makes and a write under syncd's own manager name, with their culprits.
func TestDaemonNoFalseDrift(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", testenv.MonitoringStack("app", ns))
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, h.config())
	cl := cluster(t)
	invNS := env.Namespace(t) // the inventory namespace is syncd's own: no app object may live there
	inv := newInventory(t, env.Config, cl, invNS)
	d := runDaemon(t, cfgPath, cl, reconcile.Options{Inventory: inv})
	reconciletest.Eventually(t, "first reconcile ok", func() (bool, string) {
		st := d.Status()
		return len(st) == 1 && st[0].Result == "ok", fmt.Sprintf("%+v", st)
	})

	cs := env.Clientset(t)
	ctx := context.Background()
	if _, err := cs.AppsV1().Deployments(ns).Patch(ctx, "grafana", types.MergePatchType,
		[]byte(`{"spec":{"minReadySeconds":5}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Services(ns).Patch(ctx, "grafana", types.StrategicMergePatchType,
		[]byte(`{"spec":{"ports":[{"port":9090,"targetPort":3001}]}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	// A write under syncd's own manager name (an Update: an Apply
	// without the ApplySet label would release the label too).
	if _, err := cs.CoordinationV1().Leases(ns).Patch(ctx, "grafana-leader", types.MergePatchType,
		[]byte(`{"spec":{"holderIdentity":"intruder"}}`), metav1.PatchOptions{FieldManager: "syncd-web"}); err != nil {
		t.Fatal(err)
	}

	// Every object is edited, and a recomputation publishes all its new
	// findings in one alert: once each edit is alerted, any false finding
	// would have been alerted too (in that alert or an earlier one).
	reconciletest.Eventually(t, "every edit alerted", func() (bool, string) {
		n := 0
		for _, p := range h.alerts() {
			if p.State == "open" {
				n++
			}
		}
		return n >= 3, fmt.Sprintf("alerts=%+v", h.alerts())
	})
	want := map[string]string{
		"Deployment grafana":   ".spec.minReadySeconds taken-over kubectl-edit 0 5",
		"Service grafana":      `.spec.ports[port=9090,protocol="TCP"].targetPort taken-over kubectl-edit 3000 3001`,
		"Lease grafana-leader": ".spec.holderIdentity value-drift - grafana-0 intruder",
	}
	for _, p := range h.alerts() {
		var got []string
		for _, f := range p.Fields {
			culprit := "-"
			if f.Culprit != nil {
				culprit = f.Culprit.Manager
			}
			got = append(got, strings.Join([]string{f.Path, f.Class, culprit, f.Desired, f.Live}, " "))
		}
		key := p.Object.Kind + " " + p.Object.Name
		if p.State != "open" || strings.Join(got, "; ") != want[key] {
			t.Errorf("alert %s %s: fields %q, want only %q", p.State, key, got, want[key])
		}
	}
	if st := d.Status(); st[0].Findings != 3 {
		t.Errorf("status findings = %d, want 3", st[0].Findings)
	}
}
