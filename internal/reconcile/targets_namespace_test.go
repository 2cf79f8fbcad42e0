package reconcile_test

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	dynamicfake "k8s.io/client-go/dynamic/fake"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
)

// TestTargetsForAppObject: the targets ForAppObject makes read a
// cluster.secretRef Secret in the namespace given (an App's), never in
// syncd's, even when syncd's holds a Secret of that name. (Only reading
// the Secret is checked here, so a fake client serves it; remote
// clusters themselves are tested against real API servers.)
func TestTargetsForAppObject(t *testing.T) {
	scheme := runtime.NewScheme()
	if err := corev1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	inSyncd := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: "syncd", Name: "prod"}, Data: map[string][]byte{"value": []byte("syncd-kubeconfig-value")}}
	ts := reconcile.NewTargets(reconcile.TargetsOptions{Local: dynamicfake.NewSimpleDynamicClient(scheme, inSyncd), Namespace: "syncd"})
	t.Cleanup(ts.Close)
	app := config.App{Name: "team-a-web", Cluster: &config.ClusterSpec{SecretRef: &config.SecretKeyRef{Name: "prod"}}}

	_, err := ts.ForAppObject("team-a").Resolve(context.Background(), app)
	want := "app team-a-web: cluster.secretRef (Secret team-a/prod key value): not found: create it, e.g. kubectl -n team-a create secret generic prod"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Errorf("Resolve in namespace team-a = %v\nwant an error containing %q", err, want)
	}
	if err != nil && strings.Contains(err.Error(), "syncd-kubeconfig-value") {
		t.Errorf("the error carries the Secret's value: %v", err)
	}
	// syncd's own targets read syncd's namespace: the Secret is found
	// (and its value is no kubeconfig).
	if _, err := ts.Resolve(context.Background(), app); err == nil || strings.Contains(err.Error(), "not found") {
		t.Errorf("Resolve in syncd's namespace = %v, want the Secret read and refused as a kubeconfig", err)
	} else if strings.Contains(err.Error(), "syncd-kubeconfig-value") {
		t.Errorf("the error carries the Secret's value: %v", err)
	}
	var nilTargets *reconcile.Targets
	if got := nilTargets.ForAppObject("team-a"); got != nil {
		t.Errorf("nil Targets ForAppObject = %v, want nil", got)
	}
}
