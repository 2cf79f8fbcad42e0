package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonIgnoredFieldNotReverted: in `syncd run`, a field an ignore
// rule of the app matches, changed by another writer (an Update by
// "operator"), is not a finding in /status, raises no drift alert, and is
// not reverted by the reconciles that follow (each OK, no conflict),
// while the polls keep applying the app.
func TestDaemonIgnoredFieldNotReverted(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1s")
	appendFile(t, cfgPath, "  ignore:\n  - kinds: [ConfigMap]\n    paths: [.data.color]\n    managers: [operator]\n"+h.config())

	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
	})
	reconciletest.Eventually(t, "first reconcile", func() (bool, string) { return d.Ready(), fmt.Sprintf("%+v", d.Status()) })

	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Patch(context.Background(), "settings", types.MergePatchType, []byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	patched := time.Now()
	// Two reconciles that started after the change.
	reconciletest.Eventually(t, "two reconciles after the change", func() (bool, string) {
		st := d.Status()
		return len(st) == 1 && st[0].LastRun.After(patched.Add(time.Second)), fmt.Sprintf("%+v", st)
	})
	st := d.Status()[0]
	if st.Result != reconcile.ResultOK || st.Findings != 0 || st.Conflicts != 0 {
		t.Errorf("status after the ignored change = %+v, want ok, no finding, no conflict", st)
	}
	cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["color"] != "green" {
		t.Errorf("the daemon reverted an ignored field: color = %q, want green", cm.Data["color"])
	}
	if got := h.alerts(); len(got) != 0 {
		t.Errorf("drift alerts for an ignored field: %+v", got)
	}
}
