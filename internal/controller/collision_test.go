package controller

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
)

// createAppIn creates an App of namespace ns rendering path of the rig's
// GitSource (in the rig's namespace).
func (r *rig) createAppIn(ns, name, path string) {
	r.t.Helper()
	r.createAppWith(ns, name, path, "")
}

// createAppWith is createAppIn with extra fields of the spec (", manager: x").
func (r *rig) createAppWith(ns, name, path, extra string) {
	r.t.Helper()
	u := object(r.t, fmt.Sprintf(`
kind: App
metadata: {name: %s}
spec: {sourceRef: {kind: GitSource, name: repo, namespace: %s}, path: %s%s}`, name, r.ns, path, extra))
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
}

// waitAppIn polls the App ns/name until cond holds for its generation.
func (r *rig) waitAppIn(ns, name, what string, cond func(*v1alpha1.App) bool) *v1alpha1.App {
	r.t.Helper()
	var last *v1alpha1.App
	eventually(r.t, "App "+ns+"/"+name+" "+what, func() (bool, string) {
		app, err := r.appIn(ns, name)
		if err != nil {
			return false, err.Error()
		}
		last = app
		return app.Status.ObservedGeneration == app.Generation && cond(app), fmt.Sprintf("%+v", app.Status)
	})
	return last
}

// parentSecret is the inventory parent Secret of an app name, in the
// rig's inventory namespace.
func (r *rig) parentSecret(appName string) *corev1.Secret {
	r.t.Helper()
	s, err := env.Clientset(r.t).CoreV1().Secrets(r.invNS).Get(context.Background(), inventory.ParentName(appName), metav1.GetOptions{})
	if err != nil {
		r.t.Fatal(err)
	}
	return s
}

// TestCollidingAppNames: App <ns>-b/web and App <ns>/b-web share the app
// name <ns>-b-web. The victim (the older, which owns the inventory) runs;
// the intruder is refused naming it, before and after a restart in which
// the intruder claims the name first, and deleting the intruder prunes
// nothing. The victim's inventory is never written by the intruder.
func TestCollidingAppNames(t *testing.T) {
	tenancy := Options{Tenancy: Tenancy{CrossNamespaceSources: true}}
	r := newRigWith(t, "1h", tenancy)
	intruderNS := env.Namespace(t)
	victimNS := intruderNS + "-b"
	cs := env.Clientset(t)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: victimNS}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), victimNS, metav1.DeleteOptions{}) })
	name := AppName(victimNS, "web")
	if AppName(intruderNS, "b-web") != name {
		t.Fatalf("the two Apps' names do not collide: %s, %s", name, AppName(intruderNS, "b-web"))
	}
	victim, intruder := victimNS+"/web", intruderNS+"/b-web"

	r.createAppIn(victimNS, "web", "web")
	r.waitAppIn(victimNS, "web", "Ready", readyAt(r.sha))
	before := r.parentSecret(name)
	if got := before.Annotations[inventory.AnnotationOwner]; got != "App "+victim {
		t.Errorf("the victim's inventory records owner %q, want %q", got, "App "+victim)
	}

	r.createAppIn(intruderNS, "b-web", "api")
	refused := func() {
		t.Helper()
		app := r.waitAppIn(intruderNS, "b-web", "refused", func(a *v1alpha1.App) bool {
			c := ready(a)
			return c != nil && c.Status == metav1.ConditionFalse
		})
		c := ready(app)
		if c.Reason != string(v1alpha1.ReasonNameCollision) || !strings.Contains(c.Message, "an App of another namespace") || !strings.Contains(c.Message, "rename it") {
			t.Errorf("intruder's Ready = %s: %s; want NameCollision saying an App of another namespace holds the name and what to do", c.Reason, c.Message)
		}
		for _, m := range r.eventMessagesIn(intruderNS, "b-web") {
			if strings.Contains(m, victim) {
				t.Errorf("an Event of the intruder names the victim App %s (another team's): %s", victim, m)
			}
		}
		if strings.Contains(c.Message, victim) {
			t.Errorf("intruder's Ready message names the victim App %s (another team's): %s", victim, c.Message)
		}
		if _, err := cs.CoreV1().ConfigMaps(intruderNS).Get(context.Background(), "api", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
			t.Errorf("the intruder's ConfigMap api: %v, want NotFound", err)
		}
		r.waitAppIn(victimNS, "web", "Ready", readyAt(r.sha))
		after := r.parentSecret(name)
		if diff := cmp.Diff(before.Data, after.Data); diff != "" || after.Annotations[inventory.AnnotationOwner] != "App "+victim {
			t.Errorf("the victim's inventory changed (owner %q; data -before +after):\n%s", after.Annotations[inventory.AnnotationOwner], diff)
		}
	}
	refused()

	// A restart in which the intruder holds the name first.
	r.stop()
	names := NewNames()
	if err := names.claim(name, intruder, nil); err != nil {
		t.Fatal(err)
	}
	restarted := tenancy
	restarted.Names = names
	c, _ := r.startIn(r.invNS, restarted)
	eventually(t, "both Apps reconciled by the restarted controller", func() (bool, string) {
		v, i := c.Reconciles(victimNS, "web"), c.Reconciles(intruderNS, "b-web")
		return v > 0 && i > 0, fmt.Sprintf("victim %d, intruder %d", v, i)
	})
	refused()

	if err := r.dyn.Resource(v1alpha1.AppResource).Namespace(intruderNS).Delete(context.Background(), "b-web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, "the intruder gone", func() (bool, string) {
		_, err := r.appIn(intruderNS, "b-web")
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
	if _, err := cs.CoreV1().ConfigMaps(victimNS).Get(context.Background(), "web", metav1.GetOptions{}); err != nil {
		t.Errorf("the victim's ConfigMap web after the intruder's deletion: %v", err)
	}
	if after := r.parentSecret(name); !cmp.Equal(before.Data, after.Data) {
		t.Errorf("the intruder's deletion changed the victim's inventory")
	}
}

// eventMessagesIn are the messages of the Events of App ns/name.
func (r *rig) eventMessagesIn(ns, name string) []string {
	r.t.Helper()
	evs, err := env.Clientset(r.t).CoreV1().Events(ns).List(context.Background(), metav1.ListOptions{FieldSelector: "involvedObject.name=" + name})
	if err != nil {
		r.t.Fatal(err)
	}
	var out []string
	for _, e := range evs.Items {
		out = append(out, e.Message)
	}
	return out
}

// readyAt is the condition of an App Ready at revision.
func readyAt(revision string) func(*v1alpha1.App) bool {
	return func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Status == metav1.ConditionTrue && a.Status.LastAppliedRevision == revision
	}
}
