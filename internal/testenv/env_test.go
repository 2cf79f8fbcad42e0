package testenv

import (
	"context"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
)

// TestControllerManager starts a control plane with the controller-manager
// and checks a controller really runs: the service-account controller
// creates a "default" ServiceAccount in a new namespace.
func TestControllerManager(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	e, err := Start(ctx, Options{ControllerManager: true})
	if err != nil {
		t.Fatal(err)
	}
	defer e.Stop()
	cs := e.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "kcm-check"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 90*time.Second, true, func(ctx context.Context) (bool, error) {
		_, err := cs.CoreV1().ServiceAccounts("kcm-check").Get(ctx, "default", metav1.GetOptions{})
		return err == nil, nil
	})
	if err != nil {
		t.Fatalf("no default ServiceAccount: kube-controller-manager is not running controllers: %v\n%s", err, e.logTail("kube-controller-manager")())
	}
}
