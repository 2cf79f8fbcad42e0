package daemon_test

import (
	"context"
	"fmt"
	"path/filepath"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonDriftAlert: after the daemon applied an app, an out-of-band
// write shows up as a drift finding in the status and as a signed webhook
// alert naming the field, the culprit and desired vs live — without waiting
// for the next poll (the interval is an hour).
func TestDaemonDriftAlert(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})

	// The config names the hook's files relative to its own directory.
	h := startHook(t)
	dir := h.dir
	cfgPath := filepath.Join(dir, "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, "alerts:\n- name: hook\n  type: webhook\n  urlFile: url\n  hmacKeyFile: key\n  events: [drift]\n")

	d := launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
	})
	reconciletest.Eventually(t, "first reconcile", func() (bool, string) { return d.Ready(), fmt.Sprintf("%+v", d.Status()) })

	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "settings", types.MergePatchType,
		[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "drift finding in status and alert delivered", func() (bool, string) {
		st, got := d.Status(), h.alerts()
		return len(st) == 1 && st[0].Findings == 1 && len(got) > 0, fmt.Sprintf("status=%+v alerts=%+v", st, got)
	})
	p := h.alerts()[0]
	if p.Type != "drift" || p.App != "web" || p.Object.Name != "settings" || len(p.Fields) != 1 {
		t.Fatalf("alert = %+v", p)
	}
	fd := p.Fields[0]
	if fd.Path != ".data.color" || fd.Desired != "blue" || fd.Live != "green" || fd.Culprit == nil || fd.Culprit.Manager != "operator" || fd.Culprit.Operation != "Update" {
		t.Fatalf("alert field = %+v, want .data.color blue→green by operator (Update)", fd)
	}
}
