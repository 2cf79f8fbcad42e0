package applier

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// TestBeforeFirstApplyTakeover: an object whose fields are owned by the
// API server's "before-first-apply" Update entry (what an object written
// before managedFields existed gets on its first apply) is taken over by
// the app's manager with no value changing, and a field Git drops later
// goes from the object.
func TestBeforeFirstApplyTakeover(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	app := webApp(ns, "syncd-web")
	withEnv, docWithEnv := deploymentWithEnv(t, ns)
	if _, err := c.resource(t, deployments, ns).Create(context.Background(), withEnv, metav1.CreateOptions{FieldManager: "before-first-apply"}); err != nil {
		t.Fatal(err)
	}
	seeded := without(owners(t, c.get(t, deployments, ns, "web")), deployControllers...)
	if len(seeded["before-first-apply (Update)"]) == 0 || len(seeded) != 1 {
		t.Fatalf("seed: owners %v, want one before-first-apply Update entry", seeded)
	}

	w := c.watchObject(t, deployments, ns, "web")
	plan := c.plan(t, app, string(docWithEnv))
	cs := c.apply(t, plan, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "Deployment web syncd-web configured")
	if diff := cmp.Diff([]string{"before-first-apply"}, cs.Changes[0].Resolution().Migrated); diff != "" {
		t.Errorf("Migrated (-want +got):\n%s", diff)
	}
	seen := w.stop(c, deployments)
	noValueChanged(t, seen)
	live := c.get(t, deployments, ns, "web")
	if diff := cmp.Diff(planOwners(plan, "web", ApplyOptions{RecordManagers: true}), without(owners(t, live), deployControllers...)); diff != "" {
		t.Errorf("managedFields after the takeover (-plan +live):\n%s", diff)
	}

	// Git drops the env var: it goes from the object.
	plan, live = dropEnv(t, c, app, ns)
}

// deploymentWithEnv is Deployment web in ns whose container sets env
// MODE=fast, a field a later revision in Git drops; it returns the object
// and its JSON.
func deploymentWithEnv(t *testing.T, ns string) (*unstructured.Unstructured, []byte) {
	t.Helper()
	withEnv := object(t, deployment("web", 3, "nginx:1.27"))
	containers, _, _ := unstructured.NestedSlice(withEnv.Object, "spec", "template", "spec", "containers")
	containers[0].(map[string]any)["env"] = []any{map[string]any{"name": "MODE", "value": "fast"}}
	if err := unstructured.SetNestedSlice(withEnv.Object, containers, "spec", "template", "spec", "containers"); err != nil {
		t.Fatal(err)
	}
	withEnv.SetNamespace(ns)
	doc, err := json.Marshal(withEnv.Object)
	if err != nil {
		t.Fatal(err)
	}
	return withEnv, doc
}

// dropEnv applies Deployment web without the env var deploymentWithEnv
// set, as Git's next revision, and checks the var is gone from the live
// object. It returns the plan and the live object.
func dropEnv(t *testing.T, c *cluster, app config.App, ns string) (*planner.Plan, *unstructured.Unstructured) {
	t.Helper()
	plan := c.plan(t, app, deployment("web", 3, "nginx:1.27"))
	cs := c.apply(t, plan, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "Deployment web syncd-web configured")
	live := c.get(t, deployments, ns, "web")
	containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
	if env, ok := containers[0].(map[string]any)["env"]; ok {
		t.Errorf("env %v still set after Git dropped it", env)
	}
	return plan, live
}
