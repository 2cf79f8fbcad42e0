package controller

import (
	"context"
	"fmt"
	"os"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv"
)

// TestAppMovesBetweenClusters: an App with spec.cluster applies to a
// second control plane, and a hand edit there is reported in
// status.drift and as a DriftDetected Event. With spec.cluster removed
// the App applies to syncd's own cluster, watches drift there (a hand
// edit there is reported), and its objects on the second cluster are
// pruned under its prune rules: deleted by default, kept by an App with
// prune: false.
func TestAppMovesBetweenClusters(t *testing.T) {
	second := testenv.StartT(t, testenv.Options{})
	local, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	remoteInv := second.Namespace(t)
	targets := reconcile.NewTargets(reconcile.TargetsOptions{Local: local, Inventory: &inventory.Options{Namespace: remoteInv, SyncTimeout: 5 * time.Second}, ProbeTimeout: 2 * time.Second})
	t.Cleanup(targets.Close)
	r := newRigWith(t, "1h", Options{Runner: reconcile.Options{Targets: targets}})
	ctx := context.Background()
	first, far := env.Clientset(t), second.Clientset(t)
	// The App's objects land in its own namespace, on whichever cluster.
	if _, err := far.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: r.ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	kubeconfig, err := os.ReadFile(second.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "second-kubeconfig"}, Data: map[string][]byte{"value": kubeconfig}}
	if _, err := first.CoreV1().Secrets(r.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	onSecond := fmt.Sprintf(", cluster: {name: second, context: testenv, inventoryNamespace: %s, kubeConfig: {secretRef: {name: second-kubeconfig}}}", remoteInv)
	r.app("mover", "web", onSecond)
	// keeper moves too, but does not prune: its object stays behind.
	r.app("keeper", "api", onSecond+", prune: false")
	r.waitReady("mover", r.sha)
	r.waitReady("keeper", r.sha)

	t.Run("applied to the second cluster", func(t *testing.T) {
		if got := cmValue(t, far, r.ns, "web"); got != "1" {
			t.Errorf("ConfigMap web on the second cluster = %s, want 1", got)
		}
		if got := cmValue(t, first, r.ns, "web"); got != "<absent>" {
			t.Errorf("ConfigMap web on syncd's own cluster = %s, want <absent>", got)
		}
	})
	t.Run("drift on the second cluster reported", func(t *testing.T) {
		handEdit(t, far, r.ns, "web", "remote-hand")
		r.waitDrift("mover", func(n int) bool { return n > 0 })
		r.waitEvent("mover", "DriftDetected", "remote-hand")
	})

	patch := []byte(`{"spec":{"cluster":null}}`)
	for _, name := range []string{"mover", "keeper"} {
		if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Patch(ctx, name, types.MergePatchType, patch, metav1.PatchOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	t.Run("applied to syncd's own cluster", func(t *testing.T) {
		eventually(t, "ConfigMap web on syncd's own cluster", func() (bool, string) {
			got := cmValue(t, first, r.ns, "web")
			return got == "1", got
		})
		r.waitApp("mover", "Ready after the move", func(a *v1alpha1.App) bool {
			c := ready(a)
			return c != nil && c.Status == metav1.ConditionTrue
		})
	})
	t.Run("objects on the second cluster pruned", func(t *testing.T) {
		eventually(t, "ConfigMap web gone from the second cluster", func() (bool, string) {
			got := cmValue(t, far, r.ns, "web")
			return got == "<absent>", got
		})
	})
	t.Run("an App that does not prune leaves its objects behind", func(t *testing.T) {
		eventually(t, "ConfigMap api on syncd's own cluster", func() (bool, string) {
			got := cmValue(t, first, r.ns, "api")
			return got == "1", got
		})
		if got := cmValue(t, far, r.ns, "api"); got != "1" {
			t.Errorf("ConfigMap api of the App with prune: false on the second cluster = %s, want it kept (1)", got)
		}
	})
	t.Run("drift watched on syncd's own cluster", func(t *testing.T) {
		r.waitDrift("mover", func(n int) bool { return n == 0 })
		handEdit(t, first, r.ns, "web", "local-hand")
		r.waitDrift("mover", func(n int) bool { return n > 0 })
		r.waitEvent("mover", "DriftDetected", "local-hand")
	})
}

// cmValue is data.value of ConfigMap ns/name on the cluster of cs.
func cmValue(t *testing.T, cs kubernetes.Interface, ns, name string) string {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return "<absent>"
	}
	if err != nil {
		return err.Error()
	}
	return cm.Data["value"]
}

// handEdit changes data.value of ConfigMap ns/name as field manager
// manager, the way kubectl edit does.
func handEdit(t *testing.T, cs kubernetes.Interface, ns, name, manager string) {
	t.Helper()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["value"] = "edited-by-" + manager
	if _, err := cs.CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: manager}); err != nil {
		t.Fatal(err)
	}
}

// waitDrift polls the App's status.drift until its findings satisfy ok.
func (r *rig) waitDrift(name string, ok func(int) bool) {
	r.t.Helper()
	eventually(r.t, "App "+name+" drift summary", func() (bool, string) {
		app, _, err := r.get(name)
		if err != nil {
			return false, err.Error()
		}
		n := 0
		if app.Status.Drift != nil {
			n = app.Status.Drift.Findings
		}
		return ok(n), fmt.Sprintf("%+v", app.Status.Drift)
	})
}

// waitEvent polls the Events of the App for one of reason whose message
// contains text.
func (r *rig) waitEvent(name, reason, text string) {
	r.t.Helper()
	eventually(r.t, fmt.Sprintf("Event %s on App %s mentioning %q", reason, name, text), func() (bool, string) {
		evs, err := env.Clientset(r.t).CoreV1().Events(r.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name + ",reason=" + reason})
		if err != nil {
			return false, err.Error()
		}
		var msgs []string
		for _, ev := range evs.Items {
			if strings.Contains(ev.Message, text) {
				return true, ""
			}
			msgs = append(msgs, ev.Message)
		}
		return false, strings.Join(msgs, " | ")
	})
}
