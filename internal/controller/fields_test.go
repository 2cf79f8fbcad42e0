package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestDependsOnAndSubstituteFrom: an App whose dependsOn names an App
// that does not exist yet waits (Ready=False DependencyNotReady, not
// Stalled) and applies nothing; once the dependency is created and
// Ready, the App applies, with a variable read from a ConfigMap of the
// App's namespace.
func TestDependsOnAndSubstituteFrom(t *testing.T) {
	r := newRig(t, "1h")
	next, err := r.repo.Commit("substituted", map[string][]byte{"web/cm.yaml": []byte(configMap("web", "${GREETING}"))})
	if err != nil {
		t.Fatal(err)
	}
	cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vars"}, Data: map[string]string{"GREETING": "hello"}}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(r.ns).Create(context.Background(), cm, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	r.app("web", "web", ", dependsOn: [api], substituteFrom: [{kind: ConfigMap, name: vars}]")
	waiting := r.waitApp("web", "waiting for api", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Reason == string(v1alpha1.ReasonDependencyNotReady)
	})
	if c := ready(waiting); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, "App api ") {
		t.Errorf("Ready = %+v, want False naming App api", c)
	}
	for _, cond := range waiting.Status.Conditions {
		if cond.Type == string(v1alpha1.ConditionStalled) && cond.Status != metav1.ConditionFalse {
			t.Errorf("a waiting App is Stalled: %+v", cond)
		}
	}
	if _, err := r.configMapValue("web"); err == nil {
		t.Errorf("ConfigMap web exists while its App waits for its dependency")
	}
	r.app("api", "api", "")
	r.waitReady("api", next)
	r.waitReady("web", next)
	if v, err := r.configMapValue("web"); err != nil || v != "hello" {
		t.Errorf("ConfigMap web: value %q, %v; want hello (from ConfigMap vars of the App's namespace)", v, err)
	}
}

// TestDependencyCycle: Apps whose dependsOn lead back to each other
// (a → b → a) are each Ready=False and Stalled with reason
// DependencyCycle, the message naming both; removing one dependency
// lets both apply.
func TestDependencyCycle(t *testing.T) {
	r := newRig(t, "1h")
	r.app("a", "web", ", dependsOn: [b]")
	r.app("b", "api", ", dependsOn: [a]")
	for name, want := range map[string]string{"a": "dependency cycle a → b → a", "b": "dependency cycle b → a → b"} {
		got := r.waitApp(name, "DependencyCycle", func(a *v1alpha1.App) bool {
			c := ready(a)
			return c != nil && c.Reason == string(v1alpha1.ReasonDependencyCycle)
		})
		if c := ready(got); c.Status != metav1.ConditionFalse || !strings.Contains(c.Message, want) {
			t.Errorf("App %s: Ready = %+v, want False with a message containing %q", name, c, want)
		}
		stalled := false
		for _, cond := range got.Status.Conditions {
			stalled = stalled || (cond.Type == string(v1alpha1.ConditionStalled) && cond.Status == metav1.ConditionTrue)
		}
		if !stalled {
			t.Errorf("App %s in a dependency cycle is not Stalled: %+v", name, got.Status.Conditions)
		}
	}
	if _, err := r.configMapValue("web"); err == nil {
		t.Errorf("ConfigMap web exists while its App is in a dependency cycle")
	}
	r.patchApp("b", `{"spec":{"dependsOn":null}}`)
	r.waitReady("b", r.sha)
	r.waitReady("a", r.sha)
}
