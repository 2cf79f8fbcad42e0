package applier

import (
	"context"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

var releaseImages = config.SplitRule{Manager: "syncd-web-release", Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.template.spec.containers[*].image"}}

func webApp(ns, manager string, split ...config.SplitRule) config.App {
	return config.App{Name: "web", Namespace: ns, AppSpec: config.AppSpec{Manager: manager, Split: split}}
}

// stable is what must not change while ownership moves: the spec, the
// labels and the annotations other than the managers annotation, the
// Deployment controller's revision and client-side apply's record (which
// the takeover removes on purpose).
func stable(u *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(u.Object, "spec")
	ann := map[string]string{}
	for k, v := range u.GetAnnotations() {
		if k != managersAnnotation("web") && k != "deployment.kubernetes.io/revision" && k != lastAppliedAnnotation {
			ann[k] = v
		}
	}
	return map[string]any{"spec": spec, "labels": u.GetLabels(), "annotations": ann}
}

// noValueChanged fails when any recorded version differs from the first
// in a field that must stay put.
func noValueChanged(t *testing.T, seen []*unstructured.Unstructured) {
	t.Helper()
	first := stable(seen[0])
	for _, u := range seen[1:] {
		if !equality.Semantic.DeepEqual(first, stable(u)) {
			t.Errorf("resourceVersion %s changed a value during the move (-before +during):\n%s", u.GetResourceVersion(), cmp.Diff(first, stable(u)))
			return
		}
	}
}

func wantPlanOwners(t *testing.T, c *cluster, plan *planner.Plan, ns, name string, ao ApplyOptions) {
	t.Helper()
	live := c.get(t, deployments, ns, name)
	if diff := cmp.Diff(planOwners(plan, name, ao), without(owners(t, live), deployControllers...)); diff != "" {
		t.Errorf("managedFields of %s differ from the plan (-plan +live):\n%s", name, diff)
	}
}

// TestSplitCreate: a Deployment split between two managers is created so
// that each manager owns exactly its slice, in 1+N+1 requests (the whole
// object, each split slice, the default slice again) during which no
// field's value ever changes.
func TestSplitCreate(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	plan := c.plan(t, webApp(ns, "syncd-web", releaseImages), deployment("web", 3, "nginx:1.27"))
	w := c.watchNew(t, deployments, ns, "web")
	cs := c.apply(t, plan, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "Deployment web syncd-web created", "Deployment web syncd-web-release created")
	wantPlanOwners(t, c, plan, ns, "web", ApplyOptions{RecordManagers: true})
	seen := w.stop(c, deployments)
	if len(seen) == 0 {
		t.Fatal("the watch saw no version of the Deployment")
	}
	noValueChanged(t, seen)
	// The ownership steps the watch saw: created whole under syncd-web,
	// the image shared with syncd-web-release, then released by
	// syncd-web.
	var steps []map[string][]string
	for _, u := range seen {
		o := without(owners(t, u), deployControllers...)
		if len(steps) == 0 || !cmp.Equal(steps[len(steps)-1], o) {
			steps = append(steps, o)
		}
	}
	image := `.spec.template.spec.containers[name="app"].image`
	var imageOwners [][]string
	for _, u := range seen {
		if o := sorted(ownersOf(t, u, image)); len(imageOwners) == 0 || !cmp.Equal(imageOwners[len(imageOwners)-1], o) {
			imageOwners = append(imageOwners, o)
		}
	}
	if diff := cmp.Diff([][]string{{"syncd-web"}, {"syncd-web", "syncd-web-release"}, {"syncd-web-release"}}, imageOwners); diff != "" {
		t.Errorf("owners of the image through the create (-want +got):\n%s", diff)
	}
	if len(steps) != 3 {
		t.Errorf("%d ownership states during the create, want 3 (whole, shared, split):\n%v", len(steps), steps)
	}
	live := c.get(t, deployments, ns, "web")
	if got := ownersOf(t, live, `.spec.template.spec.containers[name="app"].image`); !cmp.Equal(got, []string{"syncd-web-release"}) {
		t.Errorf("image owned by %v, want only syncd-web-release", got)
	}
	// Steady state: nothing to do.
	cs = c.apply(t, plan, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "Deployment web syncd-web unchanged", "Deployment web syncd-web-release unchanged")
	wantUnwritten(t, "steady-state run", live, c.get(t, deployments, ns, "web"))
	// The release pipeline's manager changes the image alone.
	plan2 := c.plan(t, webApp(ns, "syncd-web", releaseImages), deployment("web", 3, "nginx:1.28"))
	cs = c.apply(t, plan2, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "Deployment web syncd-web unchanged", "Deployment web syncd-web-release configured")
	wantPlanOwners(t, c, plan2, ns, "web", ApplyOptions{RecordManagers: true})
}

// TestOwnershipMoves: fields move between the app's managers (split
// change, manager rename) with no value changing on the way.
func TestOwnershipMoves(t *testing.T) {
	releaseReplicas := config.SplitRule{Manager: "syncd-web-release", Kinds: []string{"apps/Deployment"},
		Paths: []string{".spec.template.spec.containers[*].image", ".spec.replicas"}}
	tests := map[string]struct {
		from, to config.App
		want     []string
		migrated []string
	}{
		"image back to the default manager": {
			from: webApp("", "syncd-web", releaseImages), to: webApp("", "syncd-web"),
			want:     []string{"Deployment web syncd-web configured"},
			migrated: []string{"syncd-web-release"},
		},
		"image to a new split manager": {
			from: webApp("", "syncd-web"), to: webApp("", "syncd-web", releaseImages),
			want: []string{"Deployment web syncd-web configured", "Deployment web syncd-web-release configured"},
		},
		"replicas also to the split manager": {
			from: webApp("", "syncd-web", releaseImages), to: webApp("", "syncd-web", releaseReplicas),
			want: []string{"Deployment web syncd-web configured", "Deployment web syncd-web-release configured"},
		},
		"manager rename": {
			from: webApp("", "syncd-web"), to: webApp("", "platform"),
			want:     []string{"Deployment web platform configured"},
			migrated: []string{"syncd-web"},
		},
		"manager rename with a split": {
			from: webApp("", "syncd-web", releaseImages), to: webApp("", "platform", releaseImages),
			want:     []string{"Deployment web platform configured", "Deployment web syncd-web-release unchanged"},
			migrated: []string{"syncd-web"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			tc.from.Namespace, tc.to.Namespace = ns, ns
			ao := ApplyOptions{RecordManagers: true, Labels: map[string]string{"applyset.kubernetes.io/part-of": "applyset-web"}}
			before := c.plan(t, tc.from, deployment("web", 3, "nginx:1.27"))
			if cs := c.apply(t, before, ao); !cs.OK() {
				t.Fatalf("create: %v%s", changes(cs), errs(cs))
			}
			wantPlanOwners(t, c, before, ns, "web", ao)

			w := c.watchObject(t, deployments, ns, "web")
			after := c.plan(t, tc.to, deployment("web", 3, "nginx:1.27"))
			cs := c.apply(t, after, ao)
			wantChanges(t, cs, tc.want...)
			if diff := cmp.Diff(tc.migrated, cs.Changes[0].Resolution().Migrated); diff != "" {
				t.Errorf("Migrated (-want +got):\n%s", diff)
			}
			seen := w.stop(c, deployments)
			noValueChanged(t, seen)
			wantPlanOwners(t, c, after, ns, "web", ao)
			if got := c.get(t, deployments, ns, "web").GetAnnotations()[managersAnnotation("web")]; got != managerList(&after.Objects[0]) {
				t.Errorf("managers annotation = %q, want %q", got, managerList(&after.Objects[0]))
			}
			t.Logf("%d versions seen during the move; changes %v; owners before %v after %v", len(seen), changes(cs),
				without(owners(t, seen[0]), deployControllers...), without(owners(t, c.get(t, deployments, ns, "web")), deployControllers...))

			// Converged: the next run does nothing.
			live := c.get(t, deployments, ns, "web")
			cs = c.apply(t, after, ao)
			for _, ch := range cs.Changes {
				if ch.Action != Unchanged {
					t.Errorf("second run: %s %s %v", ch, ch.Manager, ch.Err)
				}
			}
			wantUnwritten(t, "second run", live, c.get(t, deployments, ns, "web"))
		})
	}
}

// TestClientSideApplyTakeover: an object last written by client-side
// kubectl apply is taken over so that a field removed from Git later is
// removed from the object (it would linger if the client-side manager kept
// owning it).
func TestClientSideApplyTakeover(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	app := webApp(ns, "syncd-web")
	withEnv, docWithEnv := deploymentWithEnv(t, ns)

	// What `kubectl apply` (client-side) does on create: the object with
	// its last-applied annotation, as manager kubectl-client-side-apply.
	csa := withEnv.DeepCopy()
	csa.SetAnnotations(map[string]string{lastAppliedAnnotation: string(docWithEnv)})
	if _, err := c.resource(t, deployments, ns).Create(context.Background(), csa, metav1.CreateOptions{FieldManager: "kubectl-client-side-apply"}); err != nil {
		t.Fatal(err)
	}

	t.Logf("owners after client-side apply: %v", without(owners(t, c.get(t, deployments, ns, "web")), deployControllers...))
	w := c.watchObject(t, deployments, ns, "web")
	plan := c.plan(t, app, string(docWithEnv))
	cs := c.apply(t, plan, ApplyOptions{RecordManagers: true})
	wantChanges(t, cs, "Deployment web syncd-web configured")
	if diff := cmp.Diff([]string{"kubectl-client-side-apply"}, cs.Changes[0].Resolution().Migrated); diff != "" {
		t.Errorf("Migrated (-want +got):\n%s", diff)
	}
	seen := w.stop(c, deployments)
	noValueChanged(t, seen)
	live := c.get(t, deployments, ns, "web")
	if _, ok := live.GetAnnotations()[lastAppliedAnnotation]; ok {
		t.Errorf("%s still set after the takeover", lastAppliedAnnotation)
	}
	t.Logf("takeover: %v migrated=%v; owners after: %v", changes(cs), cs.Changes[0].Resolution().Migrated, without(owners(t, live), deployControllers...))
	if diff := cmp.Diff(planOwners(plan, "web", ApplyOptions{RecordManagers: true}), without(owners(t, live), deployControllers...)); diff != "" {
		t.Errorf("managedFields after the takeover (-plan +live):\n%s", diff)
	}

	// Git drops the env var: it goes from the object.
	plan, live = dropEnv(t, c, app, ns)
	if diff := cmp.Diff(planOwners(plan, "web", ApplyOptions{RecordManagers: true}), without(owners(t, live), deployControllers...)); diff != "" {
		t.Errorf("managedFields after dropping env (-plan +live):\n%s", diff)
	}
}

// TestSplitConflict: a conflict on one slice of a split object is decided
// before anything is written, so fail leaves the whole object untouched.
func TestSplitConflict(t *testing.T) {
	tests := map[string]struct {
		policy       ConflictAction
		want         []string
		wantImage    string
		wantReplicas int64
	}{
		"fail":  {ConflictFail, []string{"Deployment web syncd-web skipped", "Deployment web syncd-web-release conflict"}, "nginx:1.29", 3},
		"yield": {ConflictYield, []string{"Deployment web syncd-web configured", "Deployment web syncd-web-release yielded"}, "nginx:1.29", 4},
		"force": {ConflictForce, []string{"Deployment web syncd-web configured", "Deployment web syncd-web-release forced"}, "nginx:1.27", 4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			app := webApp(ns, "syncd-web", releaseImages)
			c.apply(t, c.plan(t, app, deployment("web", 3, "nginx:1.27")), ApplyOptions{})
			// kubectl set image: an Update that takes the image.
			patch := `{"spec":{"template":{"spec":{"containers":[{"name":"app","image":"nginx:1.29"}]}}}}`
			if _, err := c.resource(t, deployments, ns).Patch(context.Background(), "web", types.StrategicMergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-set"}); err != nil {
				t.Fatal(err)
			}
			before := c.get(t, deployments, ns, "web")
			cs := c.apply(t, c.plan(t, app, deployment("web", 4, "nginx:1.27")), ApplyOptions{Policy: policyOf(t, tc.policy)})
			wantChanges(t, cs, tc.want...)
			t.Logf("%s: %v %v", name, changes(cs), errs(cs))
			live := c.get(t, deployments, ns, "web")
			if tc.policy == ConflictFail {
				wantUnwritten(t, "a run with a failed slice", before, live)
			}
			containers, _, _ := unstructured.NestedSlice(live.Object, "spec", "template", "spec", "containers")
			if got := containers[0].(map[string]any)["image"]; got != tc.wantImage {
				t.Errorf("image = %v, want %s", got, tc.wantImage)
			}
			if got := replicas(live); got != tc.wantReplicas {
				t.Errorf("replicas = %d, want %d", got, tc.wantReplicas)
			}
		})
	}
}
