package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv"
)

// remoteRig is a daemon running three apps: "near" on syncd's own
// cluster (env), "far" on a second control plane through a kubeconfig
// file, "farsecret" on the same second control plane through a
// kubeconfig held in a Secret of syncd's namespace.
type remoteRig struct {
	second            *testenv.Env
	d                 *daemon.Daemon
	metrics           *daemon.Metrics
	repo              *reconciletest.Repo
	near, far, farSec string // app namespaces: near on env, the others on second
	invNS, remoteInv  string // inventory namespaces: on env, on second
}

func startRemoteRig(t *testing.T) *remoteRig {
	t.Helper()
	rg := &remoteRig{second: testenv.StartT(t, testenv.Options{})}
	rg.near, rg.invNS = env.Namespace(t), env.Namespace(t)
	syncdNS := env.Namespace(t)
	rg.far, rg.farSec, rg.remoteInv = rg.second.Namespace(t), rg.second.Namespace(t), rg.second.Namespace(t)

	kubeconfig, err := os.ReadFile(rg.second.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	_, err = env.Clientset(t).CoreV1().Secrets(syncdNS).Create(context.Background(), &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "second-kubeconfig"},
		Data:       map[string][]byte{"value": kubeconfig},
	}, metav1.CreateOptions{})
	if err != nil {
		t.Fatal(err)
	}

	rg.repo = reconciletest.NewRepo(t)
	rg.repo.Commit("first", map[string]string{
		"near/cm.yaml":      reconciletest.ConfigMap(rg.near, "blue"),
		"far/cm.yaml":       reconciletest.ConfigMap(rg.far, "blue"),
		"far/extra.yaml":    reconciletest.NamedConfigMap(rg.far, "extra", "grey"),
		"farsecret/cm.yaml": reconciletest.ConfigMap(rg.farSec, "blue"),
	})
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: "file://%s", branch: main, interval: 1h}
apps:
- {name: near, source: repo, path: near, namespace: %s}
- name: far
  source: repo
  path: far
  pruneBudget: 100
  namespace: %s
  cluster: {name: second, kubeconfigFile: %s, context: testenv, inventoryNamespace: %s}
- name: farsecret
  source: repo
  path: farsecret
  namespace: %s
  cluster: {name: second-by-secret, secretRef: {name: second-kubeconfig}, inventoryNamespace: %s}
`, rg.repo.Dir, rg.near, rg.far, rg.second.Kubeconfig, rg.remoteInv, rg.farSec, rg.remoteInv)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}

	cl := cluster(t)
	cl.Config = env.Config
	md, err := metadata.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	invOpts := inventory.Options{Namespace: rg.invNS, SyncTimeout: 5 * time.Second}
	local := invOpts
	local.Config = env.Config
	inv, err := inventory.New(cl.Dynamic, md, cl.Mapper, local)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(inv.Stop)
	targets := reconcile.NewTargets(reconcile.TargetsOptions{Local: cl.Dynamic, Namespace: syncdNS, Inventory: &invOpts, ProbeTimeout: 2 * time.Second})
	t.Cleanup(targets.Close)
	rg.metrics = daemon.NewMetrics(nil)
	rg.d = startDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cl,
		Options:    reconcile.Options{Inventory: inv, Targets: targets, Namespace: syncdNS},
		Metrics:    rg.metrics,
	})
	return rg
}

func (rg *remoteRig) status(app string) daemon.AppStatus {
	for _, s := range rg.d.Status() {
		if s.App == app {
			return s
		}
	}
	return daemon.AppStatus{}
}

// color is data.color of ConfigMap ns/settings on the cluster of cs.
func color(cs kubernetes.Interface, ns string) string {
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "<absent>"
	}
	if err != nil {
		return err.Error()
	}
	return cm.Data["color"]
}

// TestRemoteCluster runs one daemon over two control planes: apps with a
// cluster section are applied to the second (objects and inventory
// there, none on the first), their drift is watched there, /status and
// the metrics name the cluster; with the second stopped, the first
// cluster's app keeps syncing, the remote apps fail naming their cluster
// and its address, and nothing is pruned until the cluster answers.
func TestRemoteCluster(t *testing.T) {
	rg := startRemoteRig(t)
	first, second := env.Clientset(t), rg.second.Clientset(t)
	ctx := context.Background()
	reconciletest.Eventually(t, "all three apps reconciled", func() (bool, string) {
		ok := true
		for _, app := range []string{"near", "far", "farsecret"} {
			ok = ok && rg.status(app).Result == reconcile.ResultOK
		}
		return ok, fmt.Sprintf("%+v", rg.d.Status())
	})

	t.Run("applied to the second cluster", func(t *testing.T) {
		got := []string{color(first, rg.near), color(second, rg.far), color(second, rg.farSec), color(second, rg.near), color(first, rg.far)}
		want := []string{"blue", "blue", "blue", "<absent>", "<absent>"}
		if strings.Join(got, ",") != strings.Join(want, ",") {
			t.Errorf("settings colors (near on first, far and farsecret on second, near on second, far on first) = %v, want %v", got, want)
		}
		if _, err := first.CoreV1().Namespaces().Get(ctx, rg.far, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("namespace %s of the remote app on the first cluster: err = %v, want not found", rg.far, err)
		}
		for _, app := range []string{"far", "farsecret"} {
			if _, err := second.CoreV1().Secrets(rg.remoteInv).Get(ctx, inventory.ParentPrefix+app, metav1.GetOptions{}); err != nil {
				t.Errorf("inventory of %s on the second cluster: %v", app, err)
			}
			if _, err := first.CoreV1().Secrets(rg.invNS).Get(ctx, inventory.ParentPrefix+app, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("inventory of %s on the first cluster: err = %v, want not found", app, err)
			}
		}
		if _, err := first.CoreV1().Secrets(rg.invNS).Get(ctx, inventory.ParentPrefix+"near", metav1.GetOptions{}); err != nil {
			t.Errorf("inventory of near on the first cluster: %v", err)
		}
	})

	t.Run("status and metrics name the cluster", func(t *testing.T) {
		got := map[string]string{}
		for _, s := range rg.d.Status() {
			got[s.App] = s.Cluster
		}
		want := map[string]string{"near": "local", "far": "second", "farsecret": "second-by-secret"}
		if fmt.Sprint(got) != fmt.Sprint(want) {
			t.Errorf("status clusters = %v, want %v", got, want)
		}
		if v := testutil.ToFloat64(rg.metrics.LastSuccess.WithLabelValues("far", "second")); v == 0 {
			t.Error(`syncd_last_success_timestamp_seconds{app="far",cluster="second"} is 0`)
		}
	})

	t.Run("drift watched on the second cluster", func(t *testing.T) {
		cm, err := second.CoreV1().ConfigMaps(rg.far).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["color"] = "pink"
		if _, err := second.CoreV1().ConfigMaps(rg.far).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
		reconciletest.Eventually(t, "drift on the second cluster reported", func() (bool, string) {
			s := rg.status("far")
			return s.Findings > 0, fmt.Sprintf("%+v", s)
		})
		if n := rg.status("near").Findings; n != 0 {
			t.Errorf("near has %d findings; the change was on the second cluster", n)
		}
		// Put Git's value back, so that the later applies meet no
		// conflict (the field is shared, not taken).
		cm, err = second.CoreV1().ConfigMaps(rg.far).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		cm.Data["color"] = "blue"
		if _, err := second.CoreV1().ConfigMaps(rg.far).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
			t.Fatal(err)
		}
	})

	t.Run("second cluster stopped", func(t *testing.T) {
		if err := rg.second.StopAPIServer(); err != nil {
			t.Fatal(err)
		}
		// A commit that would prune far's extra ConfigMap and changes
		// near's color.
		rg.repo.Commit("second", map[string]string{"near/cm.yaml": reconciletest.ConfigMap(rg.near, "green"), "far/extra.yaml": ""})
		if err := rg.d.Trigger("repo"); err != nil {
			t.Fatal(err)
		}
		reconciletest.Eventually(t, "near keeps syncing, far fails naming its cluster", func() (bool, string) {
			s := rg.status("far")
			return color(first, rg.near) == "green" && rg.status("near").Result == reconcile.ResultOK &&
					s.Result == reconcile.ResultFailed && s.Attempts >= 2,
				fmt.Sprintf("near color=%s status=%+v", color(first, rg.near), rg.d.Status())
		})
		msg := rg.status("far").Error
		for _, w := range []string{"app far: cluster second", rg.second.Config.Host, "is unreachable", "nothing is applied or pruned on it until it answers", "check that its API server runs"} {
			if !strings.Contains(msg, w) {
				t.Errorf("far's error does not say %q:\n%s", w, msg)
			}
		}
		if n := testutil.ToFloat64(rg.metrics.Errors.WithLabelValues("far", "second", "cluster")); n < 1 {
			t.Errorf(`syncd_reconcile_errors_total{app="far",cluster="second",stage="cluster"} = %v, want at least 1`, n)
		}
		// Back up, usually before the next retry (backoff has grown past
		// 10 s): nothing was pruned while it was down. On a slow machine
		// the retry can come as soon as the cluster answers and prune
		// extra then, which is right only if that run succeeded.
		if err := rg.second.StartAPIServer(ctx); err != nil {
			t.Fatal(err)
		}
		_, err := second.CoreV1().ConfigMaps(rg.far).Get(ctx, "extra", metav1.GetOptions{})
		if err != nil && !apierrors.IsNotFound(err) {
			t.Fatal(err)
		}
		if err != nil {
			reconciletest.Eventually(t, "the run that pruned extra once the cluster answered succeeded", func() (bool, string) {
				s := rg.status("far")
				return s.Result == reconcile.ResultOK, fmt.Sprintf("%+v", s)
			})
		}
		// Answering again, the cluster gets the revision and its prune.
		if err := rg.d.Trigger("repo"); err != nil {
			t.Fatal(err)
		}
		reconciletest.Eventually(t, "far reconciles again and prunes", func() (bool, string) {
			_, err := second.CoreV1().ConfigMaps(rg.far).Get(ctx, "extra", metav1.GetOptions{})
			s := rg.status("far")
			return s.Result == reconcile.ResultOK && apierrors.IsNotFound(err), fmt.Sprintf("extra: %v status=%+v", err, s)
		})
	})
}
