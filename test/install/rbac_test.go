package install

import (
	"context"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// check is one request made as a service account, and whether RBAC must
// allow it.
type check struct {
	do      func(ctx context.Context) error
	allowed bool
}

func runChecks(t *testing.T, checks map[string]check) {
	t.Helper()
	ctx := context.Background()
	for name, c := range checks {
		t.Run(name, func(t *testing.T) {
			err := c.do(ctx)
			switch {
			case c.allowed && err != nil:
				t.Errorf("want allowed, got %v", err)
			case !c.allowed && !apierrors.IsForbidden(err):
				t.Errorf("want Forbidden, got %v", err)
			}
		})
	}
}

func saClients(t *testing.T, ns, name string) (*rest.Config, kubernetes.Interface, *cluster) {
	t.Helper()
	cfg, err := env.ServiceAccountConfig(context.Background(), ns, name)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return cfg, cs, newCluster(t, cfg)
}

func configMap(ns, name string) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": name, "namespace": ns},
		"data":     map[string]any{"color": "blue"},
	}}
}

// TestServiceAccountRights installs manifests/ for real and checks, as the
// ServiceAccount syncd-system/syncd, the rights docs/install.md lists, and
// that it is refused outside them.
func TestServiceAccountRights(t *testing.T) {
	installBase(t)
	cfg, cs, sa := saClients(t, "syncd-system", "syncd")
	managed := env.Namespace(t)

	// Leader election exactly as `syncd run --leader-elect` does it: a
	// LeaseLock in syncd-system, acquired, then released on cancel.
	t.Run("leader election", func(t *testing.T) {
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		led := make(chan struct{})
		le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
			Lock: &resourcelock.LeaseLock{
				LeaseMeta:  metav1.ObjectMeta{Namespace: "syncd-system", Name: "syncd"},
				Client:     kubernetes.NewForConfigOrDie(cfg).CoordinationV1(),
				LockConfig: resourcelock.ResourceLockConfig{Identity: "install-test"},
			},
			LeaseDuration:   15 * time.Second,
			RenewDeadline:   10 * time.Second,
			RetryPeriod:     time.Second,
			ReleaseOnCancel: true,
			Callbacks: leaderelection.LeaderCallbacks{
				OnStartedLeading: func(context.Context) { close(led) },
				OnStoppedLeading: func() {},
			},
		})
		if err != nil {
			t.Fatal(err)
		}
		done := make(chan struct{})
		go func() { le.Run(ctx); close(done) }()
		select {
		case <-led:
		case <-done:
			t.Fatal("leader election ended without leading")
		case <-time.After(time.Minute):
			t.Fatal("did not acquire the Lease syncd-system/syncd within a minute")
		}
		cancel()
		<-done
		// ReleaseOnCancel updated the Lease: the holder is cleared.
		l, err := cs.CoordinationV1().Leases("syncd-system").Get(context.Background(), "syncd", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if l.Spec.HolderIdentity != nil && *l.Spec.HolderIdentity != "" {
			t.Errorf("Lease holder after release: %q, want none", *l.Spec.HolderIdentity)
		}
	})

	runChecks(t, map[string]check{
		"update a Lease in syncd-system": {allowed: true, do: func(ctx context.Context) error {
			l, err := cs.CoordinationV1().Leases("syncd-system").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "syncd-shard-1"}}, metav1.CreateOptions{})
			if err != nil {
				return err
			}
			id := "x"
			l.Spec.HolderIdentity = &id
			_, err = cs.CoordinationV1().Leases("syncd-system").Update(ctx, l, metav1.UpdateOptions{})
			return err
		}},
		"apply a ConfigMap in a managed namespace": {allowed: true, do: func(ctx context.Context) error {
			_, err := sa.apply(ctx, configMap(managed, "web-settings"), "syncd-web", false)
			return err
		}},
		"delete (prune) a ConfigMap in a managed namespace": {allowed: true, do: func(ctx context.Context) error {
			if _, err := sa.apply(ctx, configMap(managed, "gone"), "syncd-web", false); err != nil {
				return err
			}
			return cs.CoreV1().ConfigMaps(managed).Delete(ctx, "gone", metav1.DeleteOptions{})
		}},
		"watch Deployments cluster-wide (drift informers)": {allowed: true, do: func(ctx context.Context) error {
			w, err := cs.AppsV1().Deployments("").Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		"apply an inventory Secret in syncd-system": {allowed: true, do: func(ctx context.Context) error {
			s := &unstructured.Unstructured{Object: map[string]any{
				"apiVersion": "v1", "kind": "Secret",
				"metadata": map[string]any{"name": "syncd-applyset-rbac-check", "namespace": "syncd-system"},
				"type":     "Opaque",
			}}
			_, err := sa.apply(ctx, s, "syncd-inventory", false)
			return err
		}},
		"get its own Namespace (the inventory's start check)": {allowed: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Namespaces().Get(ctx, "syncd-system", metav1.GetOptions{})
			return err
		}},
		"read a ConfigMap in syncd-system (substituteFrom)": {allowed: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().ConfigMaps("syncd-system").Get(ctx, "cluster-vars", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}},
		"create an Event in syncd-system": {allowed: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Events("syncd-system").Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "syncd-"},
				InvolvedObject: corev1.ObjectReference{Kind: "Secret", Namespace: "syncd-system", Name: "syncd-applyset-rbac-check"},
				Reason:         "Applied", Message: "test", Type: corev1.EventTypeNormal,
			}, metav1.CreateOptions{})
			return err
		}},

		"create a ClusterRoleBinding": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.RbacV1().ClusterRoleBindings().Create(ctx, &rbacv1.ClusterRoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "syncd-escalate"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "cluster-admin"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "syncd-system", Name: "syncd"}},
			}, metav1.CreateOptions{})
			return err
		}},
		"create a RoleBinding in a managed namespace": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.RbacV1().RoleBindings(managed).Create(ctx, &rbacv1.RoleBinding{
				ObjectMeta: metav1.ObjectMeta{Name: "syncd-escalate"},
				RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "view"},
				Subjects:   []rbacv1.Subject{{Kind: rbacv1.ServiceAccountKind, Namespace: "syncd-system", Name: "syncd"}},
			}, metav1.CreateOptions{})
			return err
		}},
		"read a Secret in kube-system": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets("kube-system").Get(ctx, "any", metav1.GetOptions{})
			return err
		}},
		"list Secrets cluster-wide": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets("").List(ctx, metav1.ListOptions{})
			return err
		}},
		"read a Secret in a managed namespace": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(managed).Get(ctx, "any", metav1.GetOptions{})
			return err
		}},
		"update a Lease in kube-system": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoordinationV1().Leases("kube-system").Create(ctx, &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "syncd"}}, metav1.CreateOptions{})
			return err
		}},
		"delete a Namespace": {allowed: false, do: func(ctx context.Context) error {
			return cs.CoreV1().Namespaces().Delete(ctx, managed, metav1.DeleteOptions{})
		}},
		"patch a Node": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Nodes().Patch(ctx, "any", types.MergePatchType, []byte(`{}`), metav1.PatchOptions{})
			return err
		}},
	})
}

// TestCIIdentityRights installs manifests/ci/ and checks the CI identity:
// it can dry-run the example app's kinds in the bound namespace and
// nothing elsewhere, and (what RBAC cannot prevent, and the ClusterRole's
// comment says) it can also write for real there.
func TestCIIdentityRights(t *testing.T) {
	installBase(t)
	ensureNamespace(t, "web")
	admin := newCluster(t, env.Config)
	for _, o := range kustomizeBuild(t, "manifests/ci") {
		if _, err := admin.apply(context.Background(), o, "install-test", false); err != nil {
			t.Fatalf("install %s: %v", describe(o), err)
		}
	}
	_, cs, ci := saClients(t, "syncd-system", "syncd-plan")
	other := env.Namespace(t)
	dry := func(ns, name string) func(ctx context.Context) error {
		return func(ctx context.Context) error {
			_, err := ci.apply(ctx, configMap(ns, name), "syncd-web", true)
			return err
		}
	}
	runChecks(t, map[string]check{
		"dry-run apply a ConfigMap in web": {allowed: true, do: dry("web", "plan-check")},
		"read Deployments in web": {allowed: true, do: func(ctx context.Context) error {
			_, err := cs.AppsV1().Deployments("web").List(ctx, metav1.ListOptions{})
			return err
		}},
		// The honest limit: RBAC cannot restrict patch/create to dryRun.
		"apply for real in web (RBAC cannot forbid it)": {allowed: true, do: func(ctx context.Context) error {
			_, err := ci.apply(ctx, configMap("web", "not-dry"), "syncd-web", false)
			return err
		}},
		"dry-run apply in another namespace": {allowed: false, do: dry(other, "plan-check")},
		"delete in web": {allowed: false, do: func(ctx context.Context) error {
			return cs.CoreV1().ConfigMaps("web").Delete(ctx, "not-dry", metav1.DeleteOptions{})
		}},
		"read Secrets in web": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets("web").List(ctx, metav1.ListOptions{})
			return err
		}},
		"list the Secrets of syncd's namespace": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets("syncd-system").List(ctx, metav1.ListOptions{})
			return err
		}},
		"get the example app's inventory Secret": {allowed: true, do: func(ctx context.Context) error {
			// RBAC is decided before existence: NotFound means allowed.
			_, err := cs.CoreV1().Secrets("syncd-system").Get(ctx, "syncd-applyset-web", metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			return err
		}},
		"get another Secret of syncd's namespace": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets("syncd-system").Get(ctx, "syncd-git", metav1.GetOptions{})
			return err
		}},
	})
}
