package applier

import (
	"context"
	"fmt"
	"sort"
	"testing"

	"github.com/google/go-cmp/cmp"
	autoscalingv1 "k8s.io/api/autoscaling/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/retry"

	"syncd.dev/syncd/internal/config"
)

// deployment returns a Deployment manifest; replicas < 0 leaves the
// field out, as a Git repository that lets an autoscaler own it would.
func deployment(name string, replicas int, image string) string {
	r := ""
	if replicas >= 0 {
		r = fmt.Sprintf("  replicas: %d\n", replicas)
	}
	return fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: %[1]s
  labels:
    app: %[1]s
spec:
%[2]s  selector:
    matchLabels:
      app: %[1]s
  template:
    metadata:
      labels:
        app: %[1]s
    spec:
      containers:
      - name: app
        image: %[3]s
`, name, r, image)
}

func hpa(name, target string) string {
	return fmt.Sprintf(`apiVersion: autoscaling/v2
kind: HorizontalPodAutoscaler
metadata:
  name: %s
spec:
  scaleTargetRef:
    apiVersion: apps/v1
    kind: Deployment
    name: %s
  minReplicas: 2
  maxReplicas: 20
  metrics:
  - type: Resource
    resource:
      name: cpu
      target:
        type: Utilization
        averageUtilization: 80
`, name, target)
}

// scaleAs sets replicas through the /scale subresource (an Update with
// subresource scale), the way the HPA controller and kubectl scale do.
func scaleAs(t *testing.T, ns, name, manager string, n int32) {
	t.Helper()
	cs := env.Clientset(t)
	ctx := context.Background()
	// The Deployment controller writes the object too: retry stale reads.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		sc, err := cs.AppsV1().Deployments(ns).GetScale(ctx, name, metav1.GetOptions{})
		if err != nil {
			return err
		}
		sc.Spec.Replicas = n
		_, err = cs.AppsV1().Deployments(ns).UpdateScale(ctx, name, &autoscalingv1.Scale{ObjectMeta: sc.ObjectMeta, Spec: sc.Spec}, metav1.UpdateOptions{FieldManager: manager})
		return err
	})
	if err != nil {
		t.Fatalf("scale %s to %d as %s: %v", name, n, manager, err)
	}
}

// deployControllers are the managers of the Deployment controller, which
// runs in the test control plane and is not part of any scenario.
var deployControllers = []string{"kube-controller-manager"}

func sorted(s []string) []string {
	out := append([]string(nil), s...)
	sort.Strings(out)
	return out
}

func ownersOf(t *testing.T, u *unstructured.Unstructured, field string) []string {
	var out []string
	for m, fs := range owners(t, u) {
		for _, f := range fs {
			if f == field {
				out = append(out, m)
			}
		}
	}
	return out
}

// TestHPAHandoff is the replicas trap: Git stops setting replicas because
// an autoscaler should own it. Dropping the field from the apply must not
// reset it to the API server's default (1), ever, not even for an
// instant.
func TestHPAHandoff(t *testing.T) {
	c := newCluster(t, env.Config)
	app := config.App{Name: "web", AppSpec: config.AppSpec{Manager: "syncd-web"}}

	t.Run("another writer took replicas through /scale", func(t *testing.T) {
		ns := env.Namespace(t)
		app.Namespace = ns
		wantChanges(t, c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27")), ApplyOptions{RecordManagers: true}),
			"Deployment web syncd-web created")
		w := c.watchObject(t, deployments, ns, "web")
		scaleAs(t, ns, "web", "hpa-sim", 12)
		cs := c.apply(t, c.plan(t, app, deployment("web", -1, "nginx:1.27")), ApplyOptions{RecordManagers: true})
		// syncd-web lost replicas to hpa-sim already: omitting it changes
		// nothing.
		wantChanges(t, cs, "Deployment web syncd-web unchanged")
		seen := w.stop(c, deployments)
		if diff := cmp.Diff([]int64{3, 12}, replicaHistory(seen)); diff != "" {
			t.Errorf("replicas over time (-want +got):\n%s", diff)
		}
		live := c.get(t, deployments, ns, "web")
		if diff := cmp.Diff([]string{"hpa-sim (Update/scale)"}, ownersOf(t, live, ".spec.replicas")); diff != "" {
			t.Errorf("owners of .spec.replicas (-want +got):\n%s", diff)
		}
		if got := cs.Changes[0].Resolution().Held; got != nil {
			t.Errorf("Held = %v, want nothing held (hpa-sim owns replicas)", got)
		}
	})

	t.Run("nobody else owns replicas: held until someone takes it", func(t *testing.T) {
		ns := env.Namespace(t)
		app.Namespace = ns
		c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27")), ApplyOptions{RecordManagers: true})
		w := c.watchObject(t, deployments, ns, "web")

		noReplicas := c.plan(t, app, deployment("web", -1, "nginx:1.27"))
		cs := c.apply(t, noReplicas, ApplyOptions{RecordManagers: true})
		wantChanges(t, cs, "Deployment web syncd-web handoff-pending")
		if diff := cmp.Diff([]string{".spec.replicas"}, cs.Changes[0].Resolution().Held); diff != "" {
			t.Errorf("Held (-want +got):\n%s", diff)
		}
		t.Logf("drop replicas: %s held=%v", cs.Changes[0], cs.Changes[0].Resolution().Held)
		live := c.get(t, deployments, ns, "web")
		t.Logf("owners while held: %v", without(owners(t, live), deployControllers...))
		if diff := cmp.Diff([]string{"syncd-web-handoff"}, ownersOf(t, live, ".spec.replicas")); diff != "" {
			t.Errorf("owners of .spec.replicas (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff([]string{".spec.replicas"}, owners(t, live)["syncd-web-handoff"]); diff != "" {
			t.Errorf("handoff manager owns (-want +got):\n%s", diff)
		}
		if diff := cmp.Diff(planOwners(noReplicas, "web", ApplyOptions{RecordManagers: true})["syncd-web"], owners(t, live)["syncd-web"]); diff != "" {
			t.Errorf("syncd-web owns (-want +got):\n%s", diff)
		}

		// While held, a re-run changes nothing and keeps holding.
		cs = c.apply(t, noReplicas, ApplyOptions{RecordManagers: true})
		wantChanges(t, cs, "Deployment web syncd-web unchanged")
		wantUnwritten(t, "re-run while held", live, c.get(t, deployments, ns, "web"))

		// The autoscaler takes it: the handoff manager's entry goes away.
		scaleAs(t, ns, "web", "hpa-sim", 7)
		live = c.get(t, deployments, ns, "web")
		o := owners(t, live)
		t.Logf("owners after /scale: %v", without(o, deployControllers...))
		if _, ok := o["syncd-web-handoff"]; ok {
			t.Errorf("handoff manager still has an entry after /scale took replicas: %v", o)
		}
		cs = c.apply(t, noReplicas, ApplyOptions{RecordManagers: true})
		wantChanges(t, cs, "Deployment web syncd-web unchanged")
		seen := w.stop(c, deployments)
		if diff := cmp.Diff([]int64{3, 7}, replicaHistory(seen)); diff != "" {
			t.Errorf("replicas over time (-want +got):\n%s", diff)
		}
		if got := replicas(c.get(t, deployments, ns, "web")); got != 7 {
			t.Errorf("replicas = %d after the later apply, want 7", got)
		}
	})

	t.Run("split object: the dry run predicts the hold the apply makes", func(t *testing.T) {
		// The container's name is a key field both managers own; that
		// shared field must not make the dry run treat the object as
		// moving fields between managers (it then returned the live object
		// unchanged and predicted no hold).
		ns := env.Namespace(t)
		split := webApp(ns, "syncd-web", releaseImages)
		c.apply(t, c.plan(t, split, deployment("web", 3, "nginx:1.27")), ApplyOptions{RecordManagers: true})
		noReplicas := c.plan(t, split, deployment("web", -1, "nginx:1.27"))
		before := c.get(t, deployments, ns, "web")
		dry, err := c.applier(t, Options{DryRun: true}).Apply(context.Background(), noReplicas, ApplyOptions{RecordManagers: true})
		if err != nil {
			t.Fatal(err)
		}
		wantChanges(t, dry, "Deployment web syncd-web handoff-pending", "Deployment web syncd-web-release unchanged")
		if diff := cmp.Diff([]string{".spec.replicas"}, dry.Changes[0].Resolution().Held); diff != "" {
			t.Errorf("dry run Held (-want +got):\n%s", diff)
		}
		wantUnwritten(t, "dry run", before, c.get(t, deployments, ns, "web"))
		cs := c.apply(t, noReplicas, ApplyOptions{RecordManagers: true})
		wantChanges(t, cs, "Deployment web syncd-web handoff-pending", "Deployment web syncd-web-release unchanged")
		live := c.get(t, deployments, ns, "web")
		if got := replicas(live); got != 3 {
			t.Errorf("replicas = %d after the split handoff, want 3 kept", got)
		}
		if diff := cmp.Diff([]string{"syncd-web-handoff"}, ownersOf(t, live, ".spec.replicas")); diff != "" {
			t.Errorf("owners of .spec.replicas (-want +got):\n%s", diff)
		}
	})

	t.Run("handoff release lets go at once", func(t *testing.T) {
		ns := env.Namespace(t)
		app.Namespace = ns
		c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27")), ApplyOptions{})
		cs := c.apply(t, c.plan(t, app, deployment("web", -1, "nginx:1.27")), ApplyOptions{ReleaseHandoff: true})
		wantChanges(t, cs, "Deployment web syncd-web configured")
		live := c.get(t, deployments, ns, "web")
		if got := replicas(live); got != 1 {
			t.Errorf("replicas = %d with handoff: release, want the default 1", got)
		}
		if got := ownersOf(t, live, ".spec.replicas"); got != nil {
			t.Errorf("replicas owned by %v, want nobody", got)
		}
	})

	t.Run("shared by another Apply: the hold is released on the next sync", func(t *testing.T) {
		ns := env.Namespace(t)
		app.Namespace = ns
		c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27")), ApplyOptions{})
		noReplicas := c.plan(t, app, deployment("web", -1, "nginx:1.27"))
		wantChanges(t, c.apply(t, noReplicas, ApplyOptions{}), "Deployment web syncd-web handoff-pending")
		w := c.watchObject(t, deployments, ns, "web")
		force := false
		other := []byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"web"},"spec":{"replicas":3}}`)
		if _, err := c.resource(t, deployments, ns).Patch(context.Background(), "web", types.ApplyPatchType, other, metav1.PatchOptions{FieldManager: "autoscaler", Force: &force}); err != nil {
			t.Fatal(err)
		}
		if got := ownersOf(t, c.get(t, deployments, ns, "web"), ".spec.replicas"); !cmp.Equal(sorted(got), []string{"autoscaler", "syncd-web-handoff"}) {
			t.Errorf("replicas owned by %v, want shared by autoscaler and syncd-web-handoff", got)
		}
		cs := c.apply(t, noReplicas, ApplyOptions{})
		if !cs.OK() {
			t.Fatalf("apply: %v%s", changes(cs), errs(cs))
		}
		live := c.get(t, deployments, ns, "web")
		if got := ownersOf(t, live, ".spec.replicas"); !cmp.Equal(got, []string{"autoscaler"}) {
			t.Errorf("replicas owned by %v, want [autoscaler]", got)
		}
		if _, ok := owners(t, live)["syncd-web-handoff"]; ok {
			t.Error("handoff manager still has an entry")
		}
		if diff := cmp.Diff([]int64{3}, replicaHistory(w.stop(c, deployments))); diff != "" {
			t.Errorf("replicas over time (-want +got):\n%s", diff)
		}
	})

	t.Run("handoff release lets an existing hold go", func(t *testing.T) {
		ns := env.Namespace(t)
		app.Namespace = ns
		c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27")), ApplyOptions{})
		noReplicas := c.plan(t, app, deployment("web", -1, "nginx:1.27"))
		wantChanges(t, c.apply(t, noReplicas, ApplyOptions{}), "Deployment web syncd-web handoff-pending")
		c.apply(t, noReplicas, ApplyOptions{ReleaseHandoff: true})
		live := c.get(t, deployments, ns, "web")
		if _, ok := owners(t, live)["syncd-web-handoff"]; ok {
			t.Error("handoff manager still has an entry after handoff: release")
		}
		if got := replicas(live); got != 1 {
			t.Errorf("replicas = %d after the hold was released, want the default 1", got)
		}
	})

	t.Run("held replicas are let go when Git sets them again", func(t *testing.T) {
		ns := env.Namespace(t)
		app.Namespace = ns
		c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27")), ApplyOptions{})
		c.apply(t, c.plan(t, app, deployment("web", -1, "nginx:1.27")), ApplyOptions{})
		cs := c.apply(t, c.plan(t, app, deployment("web", 5, "nginx:1.27")), ApplyOptions{})
		wantChanges(t, cs, "Deployment web syncd-web configured")
		live := c.get(t, deployments, ns, "web")
		if got := replicas(live); got != 5 {
			t.Errorf("replicas = %d, want 5", got)
		}
		if got := ownersOf(t, live, ".spec.replicas"); !cmp.Equal(got, []string{"syncd-web"}) {
			t.Errorf("replicas owned by %v, want [syncd-web]", got)
		}
	})

	t.Run("an HPA in the plan: replicas sent only at creation", func(t *testing.T) {
		ns := env.Namespace(t)
		app.Namespace = ns
		cs := c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27"), hpa("web", "web")), ApplyOptions{})
		wantChanges(t, cs, "Deployment web syncd-web created", "HorizontalPodAutoscaler web syncd-web created")
		if got := replicas(c.get(t, deployments, ns, "web")); got != 3 {
			t.Fatalf("replicas = %d after creation, want 3", got)
		}
		w := c.watchObject(t, deployments, ns, "web")
		// Git says 5 now; the HPA owns the number, so it is not sent.
		cs = c.apply(t, c.plan(t, app, deployment("web", 5, "nginx:1.28"), hpa("web", "web")), ApplyOptions{})
		if !cs.OK() {
			t.Fatalf("apply: %v%s", changes(cs), errs(cs))
		}
		live := c.get(t, deployments, ns, "web")
		if got := replicas(live); got != 3 {
			t.Errorf("replicas = %d, want 3 (not sent while an HPA scales the Deployment)", got)
		}
		if got := ownersOf(t, live, ".spec.replicas"); !cmp.Equal(got, []string{"syncd-web-handoff"}) {
			t.Errorf("replicas owned by %v, want the handoff manager until the HPA writes", got)
		}
		scaleAs(t, ns, "web", "horizontal-pod-autoscaler", 4)
		c.apply(t, c.plan(t, app, deployment("web", 5, "nginx:1.28"), hpa("web", "web")), ApplyOptions{})
		seen := w.stop(c, deployments)
		if diff := cmp.Diff([]int64{3, 4}, replicaHistory(seen)); diff != "" {
			t.Errorf("replicas over time (-want +got):\n%s", diff)
		}
		image, _, _ := unstructured.NestedSlice(c.get(t, deployments, ns, "web").Object, "spec", "template", "spec", "containers")
		if got := image[0].(map[string]any)["image"]; got != "nginx:1.28" {
			t.Errorf("image = %v, want nginx:1.28 (the rest of the Deployment is still applied)", got)
		}
	})
}
