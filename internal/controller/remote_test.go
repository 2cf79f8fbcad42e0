package controller

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv"
)

// TestMoveWithOneApplySetID is TestAppMovesBetweenClusters with the
// second cluster's inventory in a namespace named as syncd's own: the
// App's ApplySet ID, so the label selector of its watches, is the same
// on both clusters, and only the cluster in the live cache's key tells
// their informers apart. Drift on the second cluster is reported; moved
// back to syncd's own cluster, the App applies there (it read the second
// cluster's informer and failed "get: not found" while the key had no
// cluster).
func TestMoveWithOneApplySetID(t *testing.T) {
	second := testenv.StartT(t, testenv.Options{})
	local, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	targets := reconcile.NewTargets(reconcile.TargetsOptions{Local: local, Inventory: &inventory.Options{SyncTimeout: 5 * time.Second}, ProbeTimeout: 2 * time.Second})
	t.Cleanup(targets.Close)
	r := newRigWith(t, "1h", Options{Runner: reconcile.Options{Targets: targets}})
	ctx := context.Background()
	first, far := env.Clientset(t), second.Clientset(t)
	for _, ns := range []string{r.ns, r.invNS} {
		if _, err := far.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	kubeconfig, err := os.ReadFile(second.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "second-kubeconfig"}, Data: map[string][]byte{"value": kubeconfig}}
	if _, err := first.CoreV1().Secrets(r.ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.app("mover", "web", fmt.Sprintf(", cluster: {name: second, context: testenv, inventoryNamespace: %s, kubeConfig: {secretRef: {name: second-kubeconfig}}}", r.invNS))
	r.waitReady("mover", r.sha)
	if got := cmValue(t, far, r.ns, "web"); got != "1" {
		t.Fatalf("ConfigMap web on the second cluster = %s, want 1", got)
	}
	handEdit(t, far, r.ns, "web", "remote-hand")
	r.waitDrift("mover", func(n int) bool { return n > 0 })

	r.patchApp("mover", `{"spec":{"cluster":null}}`)
	r.waitApp("mover", "Ready on syncd's own cluster", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionTrue && c.ObservedGeneration == a.Generation
	})
	if got := cmValue(t, first, r.ns, "web"); got != "1" {
		t.Errorf("ConfigMap web on syncd's own cluster after the move = %s, want 1", got)
	}
}
