package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// directiveCM is a ConfigMap named name in ns with data.k: v and one
// annotation (none when key is empty).
func directiveCM(ns, name, v, key, value string) string {
	ann := ""
	if key != "" {
		ann = fmt.Sprintf("\n  annotations: {%q: %q}", key, value)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\n  namespace: %s%s\ndata:\n  k: %q\n", name, ns, ann, v)
}

// TestDaemonDirectives: the per-object annotations in `syncd run`, in
// both spellings. A reconcile-disabled object is never created; an
// IfNotPresent one is created once, then neither reverted when another
// writer changes it nor updated when Git does; an ssa: Ignore object
// changed by another writer is not corrected nor reported as drift; an
// object with prune: disabled that leaves Git is kept in the cluster
// (lastPrune counts it kept) while a plain one that leaves Git is
// deleted.
func TestDaemonDirectives(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	first := map[string]string{
		"app/stopped.yaml": directiveCM(ns, "stopped", "1", "kustomize.toolkit.fluxcd.io/reconcile", "disabled"),
		"app/seeded.yaml":  directiveCM(ns, "seeded", "1", "syncd.dev/ssa", "IfNotPresent"),
		"app/quiet.yaml":   directiveCM(ns, "quiet", "1", "kustomize.toolkit.fluxcd.io/ssa", "Ignore"),
		"app/keep.yaml":    directiveCM(ns, "keep", "1", "kustomize.toolkit.fluxcd.io/prune", "disabled"),
		"app/gone.yaml":    directiveCM(ns, "gone", "1", "", ""),
	}
	repo.Commit("first", first)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1s")
	appendFile(t, cfgPath, "  pruneBudget: 100\n")
	// The inventory is not in ns: that namespace is syncd's own.
	cl := cluster(t)
	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cl,
		Options:    reconcile.Options{CacheDir: t.TempDir(), Inventory: newInventory(t, env.Config, cl, env.Namespace(t))},
	})
	reconciletest.Eventually(t, "first revision applied", func() (bool, string) { return converged(appStatus(d, "web"), repo.Head()) })

	ctx := context.Background()
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Get(ctx, "stopped", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the daemon created a reconcile-disabled object (get: %v)", err)
	}
	for _, name := range []string{"seeded", "keep", "gone"} {
		if _, err := cms.Get(ctx, name, metav1.GetOptions{}); err != nil {
			t.Errorf("%s not created: %v", name, err)
		}
	}
	// ssa: Ignore skips the object even when it is missing.
	if _, err := cms.Get(ctx, "quiet", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the daemon created an ssa: Ignore object (get: %v)", err)
	}
	if _, err := cms.Patch(ctx, "seeded", types.MergePatchType, []byte(`{"data":{"k":"operator"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	repo.Commit("second", map[string]string{
		"app/seeded.yaml": directiveCM(ns, "seeded", "2", "syncd.dev/ssa", "IfNotPresent"),
		"app/keep.yaml":   "",
		"app/gone.yaml":   "",
	})
	changed := time.Now()
	reconciletest.Eventually(t, "the second revision pruned", func() (bool, string) {
		st := appStatus(d, "web")
		if ok, state := converged(st, repo.Head()); !ok {
			return false, state
		}
		return st.LastPrune != nil && st.LastPrune.Deleted == 1, fmt.Sprintf("%+v", st)
	})
	reconciletest.Eventually(t, "a reconcile after the prune", func() (bool, string) {
		st := appStatus(d, "web")
		return st.LastRun.After(changed.Add(time.Second)), fmt.Sprintf("%+v", st)
	})
	st := appStatus(d, "web")
	if st.Result != reconcile.ResultOK || st.Findings != 0 || st.Conflicts != 0 {
		t.Errorf("status = %+v, want ok, no finding, no conflict", st)
	}
	if st.LastPrune.Kept != 1 {
		t.Errorf("lastPrune = %+v, want keep kept", *st.LastPrune)
	}
	if _, err := cms.Get(ctx, "keep", metav1.GetOptions{}); err != nil {
		t.Errorf("the daemon pruned an object with prune: disabled: %v", err)
	}
	if _, err := cms.Get(ctx, "gone", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a plain object that left Git was not pruned (get: %v)", err)
	}
	cm, err := cms.Get(ctx, "seeded", metav1.GetOptions{})
	if err != nil || cm.Data["k"] != "operator" {
		t.Errorf("seeded = %v %v, want the operator's value (IfNotPresent: never updated)", cm.Data, err)
	}
	if _, err := cms.Get(ctx, "stopped", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the daemon created a reconcile-disabled object later (get: %v)", err)
	}
}
