package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv"
)

// TestFileAppMovesBackToLocalCluster: a file app with a cluster section
// applies to a second control plane and its drift is watched there;
// with the cluster section removed from syncd.yaml, the app applies to
// syncd's own cluster, watches drift there, and its objects on the
// second cluster are pruned under its prune rules (on by default).
func TestFileAppMovesBackToLocalCluster(t *testing.T) {
	second := testenv.StartT(t, testenv.Options{})
	ctx := context.Background()
	first, far := env.Clientset(t), second.Clientset(t)
	ns, invNS, remoteInv := env.Namespace(t), env.Namespace(t), second.Namespace(t)
	// The app's namespace exists on both clusters.
	if _, err := far.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeMoveConfig(t, cfgPath, repo.Dir, ns, fmt.Sprintf("  cluster: {name: second, kubeconfigFile: %s, context: testenv, inventoryNamespace: %s}\n", second.Kubeconfig, remoteInv))

	cl := cluster(t)
	cl.Config = env.Config
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	invOpts := inventory.Options{Namespace: invNS, SyncTimeout: 5 * time.Second}
	localOpts := invOpts
	localOpts.Config = env.Config
	inv, err := inventory.New(cl.Dynamic, md, cl.Mapper, localOpts)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inv.Stop)
	targets := reconcile.NewTargets(reconcile.TargetsOptions{Local: cl.Dynamic, Namespace: invNS, Inventory: &invOpts, ProbeTimeout: 2 * time.Second})
	t.Cleanup(targets.Close)
	d := startDaemon(t, daemon.Options{
		ConfigPath:  cfgPath,
		Cluster:     cl,
		Options:     reconcile.Options{Inventory: inv, Targets: targets},
		ConfigCheck: 100 * time.Millisecond,
	})
	status := func() daemon.AppStatus {
		for _, s := range d.Status() {
			if s.App == "mover" {
				return s
			}
		}
		return daemon.AppStatus{}
	}
	waitStatus := func(what string, ok func(daemon.AppStatus) bool) {
		t.Helper()
		reconciletest.Eventually(t, what, func() (bool, string) { s := status(); return ok(s), fmt.Sprintf("%+v", s) })
	}
	waitStatus("applied to the second cluster", func(s daemon.AppStatus) bool {
		return s.Result == reconcile.ResultOK && s.Cluster == "second"
	})
	if got := []string{color(first, ns), color(far, ns)}; got[0] != "<absent>" || got[1] != "blue" {
		t.Fatalf("settings on (first, second) = %v, want [<absent> blue]", got)
	}
	recolor(t, far, ns, "pink", "remote-hand")
	waitStatus("drift on the second cluster reported", func(s daemon.AppStatus) bool { return s.Findings > 0 })

	writeMoveConfig(t, cfgPath, repo.Dir, ns, "")
	waitStatus("applied to syncd's own cluster", func(s daemon.AppStatus) bool {
		return s.Result == reconcile.ResultOK && s.Cluster == "local" && color(first, ns) == "blue"
	})
	reconciletest.Eventually(t, "settings pruned from the second cluster", func() (bool, string) {
		c := color(far, ns)
		return c == "<absent>", c
	})
	waitStatus("the second cluster's drift no longer reported", func(s daemon.AppStatus) bool { return s.Findings == 0 })
	recolor(t, first, ns, "green", "local-hand")
	waitStatus("drift on syncd's own cluster reported", func(s daemon.AppStatus) bool { return s.Findings > 0 })
}

// writeMoveConfig writes a config of one app "mover" rendering app/ of
// repoDir into ns, with cluster (an indented cluster: line, or "").
func writeMoveConfig(t *testing.T, path, repoDir, ns, cluster string) {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: "file://%s", branch: main, interval: 1h}
apps:
- name: mover
  source: repo
  path: app
  namespace: %s
%s`, repoDir, ns, cluster)
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
}

// recolor sets data.color of ConfigMap ns/settings as field manager
// manager, the way kubectl edit does.
func recolor(t *testing.T, cs kubernetes.Interface, ns, value, manager string) {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["color"] = value
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}
