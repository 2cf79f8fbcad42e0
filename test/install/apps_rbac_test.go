package install

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestAppControllerRights installs manifests/ and checks, as syncd's
// ServiceAccount, what the App controller does: watch Apps and
// GitSources everywhere, write an App's status and finalizers, and read
// a GitSource's Secret only where a RoleBinding to syncd-source-secrets
// allows it.
func TestAppControllerRights(t *testing.T) {
	installBase(t)
	cfg, cs, _ := saClients(t, "syncd-system", "syncd")
	team, other := env.Namespace(t), env.Namespace(t)
	admin := dynamic.NewForConfigOrDie(env.Config)
	app := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": v1alpha1.GroupVersion.String(), "kind": v1alpha1.KindApp,
		"metadata": map[string]any{"name": "web"},
		"spec":     map[string]any{"sourceRef": map[string]any{"kind": v1alpha1.KindGitSource, "name": "repo"}},
	}}
	waitFor(t, "the App CRD serves", func() (bool, error) {
		_, err := admin.Resource(v1alpha1.AppResource).Namespace(team).Create(context.Background(), app, metav1.CreateOptions{})
		return err == nil, err
	})
	for _, ns := range []string{team, other} {
		if _, err := env.Clientset(t).CoreV1().Secrets(ns).Create(context.Background(), secret("creds"), metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := env.Clientset(t).RbacV1().RoleBindings(team).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "syncd-source-secrets"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "syncd-source-secrets"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "syncd", Namespace: "syncd-system"}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	// A team holding the built-in edit role in its namespace declares
	// Apps there (syncd-apps-edit is aggregated into edit).
	teamCfg, _, _ := saClients(t, team, "team")
	if _, err := env.Clientset(t).RbacV1().RoleBindings(team).Create(context.Background(), &rbacv1.RoleBinding{
		ObjectMeta: metav1.ObjectMeta{Name: "team-edit"},
		RoleRef:    rbacv1.RoleRef{APIGroup: rbacv1.GroupName, Kind: "ClusterRole", Name: "edit"},
		Subjects:   []rbacv1.Subject{{Kind: "ServiceAccount", Name: "team", Namespace: team}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	teamApp := app.DeepCopy()
	teamApp.SetName("team-app")
	waitFor(t, "a team with edit creates an App", func() (bool, error) {
		_, err := dynamic.NewForConfigOrDie(teamCfg).Resource(v1alpha1.AppResource).Namespace(team).Create(context.Background(), teamApp, metav1.CreateOptions{})
		return err == nil, err
	})
	dyn := dynamic.NewForConfigOrDie(cfg)
	apps := dyn.Resource(v1alpha1.AppResource)
	runChecks(t, map[string]check{
		"list Apps cluster-wide": {allowed: true, do: func(ctx context.Context) error {
			_, err := apps.List(ctx, metav1.ListOptions{})
			return err
		}},
		"watch GitSources cluster-wide": {allowed: true, do: func(ctx context.Context) error {
			w, err := dyn.Resource(v1alpha1.GitSourceResource).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		"watch HelmSources cluster-wide": {allowed: true, do: func(ctx context.Context) error {
			w, err := dyn.Resource(v1alpha1.HelmSourceResource).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		"watch OCISources cluster-wide": {allowed: true, do: func(ctx context.Context) error {
			w, err := dyn.Resource(v1alpha1.OCISourceResource).Watch(ctx, metav1.ListOptions{})
			if err == nil {
				w.Stop()
			}
			return err
		}},
		"patch an OCISource's status": {allowed: true, do: func(ctx context.Context) error {
			_, err := dyn.Resource(v1alpha1.OCISourceResource).Namespace(team).Patch(ctx, "missing", types.MergePatchType, []byte(`{"status":{"observedGeneration":1}}`), metav1.PatchOptions{}, "status")
			if apierrors.IsNotFound(err) {
				return nil // allowed: the API server looked for it
			}
			return err
		}},
		"patch an App's status": {allowed: true, do: func(ctx context.Context) error {
			_, err := apps.Namespace(team).Patch(ctx, "web", types.MergePatchType, []byte(`{"status":{"observedGeneration":1}}`), metav1.PatchOptions{}, "status")
			return err
		}},
		"patch an App's finalizers": {allowed: true, do: func(ctx context.Context) error {
			_, err := apps.Namespace(team).Patch(ctx, "web", types.MergePatchType, []byte(`{"metadata":{"finalizers":[]}}`), metav1.PatchOptions{})
			return err
		}},
		"record an Event on an App": {allowed: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Events(team).Create(ctx, &corev1.Event{
				ObjectMeta:     metav1.ObjectMeta{GenerateName: "web."},
				InvolvedObject: corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindApp, Namespace: team, Name: "web"},
				Reason:         "Synced", Message: "test", Type: corev1.EventTypeNormal,
			}, metav1.CreateOptions{})
			return err
		}},
		"create an App": {allowed: false, do: func(ctx context.Context) error {
			_, err := apps.Namespace(team).Create(ctx, app, metav1.CreateOptions{})
			return err
		}},
		"read a Secret where syncd-source-secrets is bound": {allowed: true, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(team).Get(ctx, "creds", metav1.GetOptions{})
			return err
		}},
		"read a Secret elsewhere": {allowed: false, do: func(ctx context.Context) error {
			_, err := cs.CoreV1().Secrets(other).Get(ctx, "creds", metav1.GetOptions{})
			return err
		}},
	})
}

func secret(name string) *corev1.Secret {
	return &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name}, StringData: map[string]string{"token": "not-a-real-token"}}
}
