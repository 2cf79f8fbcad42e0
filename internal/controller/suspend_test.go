package controller

import (
	"context"
	"fmt"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// patchApp merge-patches an App of the rig's namespace.
func (r *rig) patchApp(name, patch string) {
	r.t.Helper()
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(r.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// editConfigMap sets the value of ConfigMap name as another manager
// would (kubectl edit).
func (r *rig) editConfigMap(name, value string) {
	r.t.Helper()
	patch := fmt.Sprintf(`{"data":{"value":%q}}`, value)
	_, err := env.Clientset(r.t).CoreV1().ConfigMaps(r.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		r.t.Fatal(err)
	}
}

// TestSuspendKeepsDriftReported: a suspended App is neither applied nor
// corrected, but its drift watcher still reports an edit of its object:
// status.drift counts it and a DriftDetected Event names it. Resumed,
// the App corrects it and the count goes back to 0.
func TestSuspendKeepsDriftReported(t *testing.T) {
	r := newRig(t, "1s")
	// force: the edit's manager owns the field; a correction takes it back.
	r.app("web", "web", ", conflicts: {default: force}")
	r.waitReady("web", r.sha)
	r.patchApp("web", `{"spec":{"suspend":true}}`)
	r.waitApp("web", "suspended", func(a *v1alpha1.App) bool { return a.Spec.Suspend })
	before := r.c.Reconciles(r.ns, "web")
	r.editConfigMap("web", "edited")
	r.waitApp("web", "drift reported while suspended", func(a *v1alpha1.App) bool {
		return a.Status.Drift != nil && a.Status.Drift.Findings > 0
	})
	if v, err := r.configMapValue("web"); err != nil || v != "edited" {
		t.Errorf("ConfigMap web of the suspended App: %q, %v; want the edit kept (suspend does not correct)", v, err)
	}
	if got := r.c.Reconciles(r.ns, "web") - before; got > 0 {
		t.Errorf("the suspended App was reconciled %d times after its suspension was handled; its interval must not requeue it", got)
	}
	eventually(t, "a DriftDetected Event on the App", func() (bool, string) {
		evs, err := env.Clientset(t).CoreV1().Events(r.ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=web,involvedObject.kind=App,reason=DriftDetected"})
		if err != nil {
			return false, err.Error()
		}
		for _, ev := range evs.Items {
			if ev.Type == corev1.EventTypeWarning {
				return true, ev.Message
			}
		}
		return false, fmt.Sprintf("%d events", len(evs.Items))
	})
	r.patchApp("web", `{"spec":{"suspend":false}}`)
	eventually(t, "the resumed App corrects the edit", func() (bool, string) {
		v, err := r.configMapValue("web")
		return err == nil && v == "1", fmt.Sprintf("%q %v", v, err)
	})
	r.waitApp("web", "drift back to 0", func(a *v1alpha1.App) bool { return a.Status.Drift != nil && a.Status.Drift.Findings == 0 })
}

// TestSecretEditReconciles: an App whose GitSource names a Secret that
// does not exist is SecretNotFound; creating the Secret reconciles the
// App at once (the App waits up to 5 minutes otherwise), and its
// GitSource turns Ready.
func TestSecretEditReconciles(t *testing.T) {
	r := newRig(t, "1h")
	r.create("gitsources", fmt.Sprintf(`
kind: GitSource
metadata: {name: private}
spec: {url: %q, branch: main, interval: 1h, secretRef: {name: creds}}`, r.repo.URL))
	r.create("apps", `
kind: App
metadata: {name: private}
spec: {sourceRef: {kind: GitSource, name: private}, path: web}`)
	r.waitApp("private", "SecretNotFound", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Reason == string(v1alpha1.ReasonSecretNotFound)
	})
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "creds"}, Data: map[string][]byte{"token": []byte("not-checked-by-the-loopback-server")}}
	if _, err := env.Clientset(t).CoreV1().Secrets(r.ns).Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.waitReady("private", r.sha)
	r.waitSource("private", "True "+string(v1alpha1.ReasonValid))
}

// TestConfigMapEditReconciles: editing a ConfigMap an App's
// substituteFrom names reconciles the App at once (its source polls
// hourly), and the new value is applied.
func TestConfigMapEditReconciles(t *testing.T) {
	r := newRig(t, "1h")
	next, err := r.repo.Commit("substituted", map[string][]byte{"web/cm.yaml": []byte(configMap("web", "${GREETING}"))})
	if err != nil {
		t.Fatal(err)
	}
	cms := env.Clientset(t).CoreV1().ConfigMaps(r.ns)
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vars"}, Data: map[string]string{"GREETING": "hello"}}
	if _, err := cms.Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.app("web", "web", ", substituteFrom: [{kind: ConfigMap, name: vars}]")
	r.waitReady("web", next)
	if v, err := r.configMapValue("web"); err != nil || v != "hello" {
		t.Fatalf("ConfigMap web: %q, %v; want hello", v, err)
	}
	before := r.c.Reconciles(r.ns, "web")
	if _, err := cms.Patch(context.Background(), "vars", types.MergePatchType, []byte(`{"data":{"GREETING":"bye"}}`), metav1.PatchOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the App applies the edited variable", func() (bool, string) {
		v, err := r.configMapValue("web")
		return err == nil && v == "bye", fmt.Sprintf("%q %v", v, err)
	})
	if got := r.c.Reconciles(r.ns, "web") - before; got < 1 {
		t.Errorf("the App was reconciled %d times after the ConfigMap edit, want at least 1", got)
	}
}
