package applier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

var crdCounter atomic.Int64

// TestCRDAndCustomResource: a CRD and an object of its kind in one plan.
// The CR can only be applied once the CRD is Established and the mapper
// knows the kind; Apply waits for that between stages.
func TestCRDAndCustomResource(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	group := fmt.Sprintf("t%d.applier.syncd.test", crdCounter.Add(1))
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names:
    plural: widgets
    singular: widget
    kind: Widget
    listKind: WidgetList
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:
              size:
                type: integer
              color:
                type: string
`, group)
	cr := fmt.Sprintf(`apiVersion: %s/v1
kind: Widget
metadata:
  name: w1
spec:
  size: 3
  color: red
`, group)
	gvr := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "widgets"}
	crdGVR := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	t.Cleanup(func() {
		_ = c.dyn.Resource(crdGVR).Delete(context.Background(), "widgets."+group, metav1.DeleteOptions{})
	})

	app := config.App{Name: "widgets", Namespace: ns, AppSpec: config.AppSpec{Manager: "syncd-widgets"}}
	plan := c.plan(t, app, cr, crd)
	cs := c.apply(t, plan, ApplyOptions{})
	wantChanges(t, cs, "CustomResourceDefinition widgets."+group+" syncd-widgets created", "Widget w1 syncd-widgets created")
	live := c.get(t, gvr, ns, "w1")
	// The CR was created once the CRD was Established, not before.
	established := ""
	conds, _, _ := unstructured.NestedSlice(c.get(t, crdGVR, "", "widgets."+group).Object, "status", "conditions")
	for _, cond := range conds {
		if m := cond.(map[string]any); m["type"] == "Established" && m["status"] == "True" {
			established, _ = m["lastTransitionTime"].(string)
		}
	}
	if established == "" {
		t.Fatal("CRD not Established after Apply")
	}
	if created := live.GetCreationTimestamp().UTC().Format(time.RFC3339); created < established {
		t.Errorf("Widget created at %s, before its CRD was Established at %s", created, established)
	}
	spec, _, _ := unstructured.NestedMap(live.Object, "spec")
	if diff := cmp.Diff(map[string]any{"size": int64(3), "color": "red"}, spec); diff != "" {
		t.Errorf("Widget spec (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(planOwners(plan, "w1", ApplyOptions{}), owners(t, live)); diff != "" {
		t.Errorf("Widget managedFields (-plan +live):\n%s", diff)
	}

	cs = c.apply(t, plan, ApplyOptions{})
	wantChanges(t, cs, "CustomResourceDefinition widgets."+group+" syncd-widgets unchanged", "Widget w1 syncd-widgets unchanged")
}

// TestImmutableField: a change the API server refuses as immutable fails
// with advice, or recreates the object when the app allows it.
func TestImmutableField(t *testing.T) {
	frozen := func(v string) string {
		return "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  k: " + v + "\n"
	}
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	app := appOf("app", ns)
	wantChanges(t, c.apply(t, c.plan(t, app, frozen("v1")), ApplyOptions{}), "ConfigMap frozen syncd-app created")
	before := c.get(t, configMaps, ns, "frozen")

	plan := c.plan(t, app, frozen("v2"))
	cs := c.apply(t, plan, ApplyOptions{})
	wantChanges(t, cs, "ConfigMap frozen syncd-app failed")
	err := cs.Changes[0].Err
	t.Logf("without recreate: %v", err)
	for _, want := range []string{"ConfigMap " + ns + "/frozen", "immutable", "data", "recreate: true"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	if got := data(c.get(t, configMaps, ns, "frozen"))["k"]; got != "v1" {
		t.Errorf("data.k = %q after a refused change, want v1", got)
	}

	cs = c.apply(t, plan, ApplyOptions{Recreate: true})
	if diff := cmp.Diff([]string{"ConfigMap frozen syncd-app recreated"}, changes(cs)); diff != "" {
		// Recreate deletes in the foreground: the garbage collector
		// (kube-controller-manager) must be running to finish it.
		t.Fatalf("changes (-want +got):\n%s%s", diff, errs(cs))
	}
	after := c.get(t, configMaps, ns, "frozen")
	if got := data(after)["k"]; got != "v2" {
		t.Errorf("data.k = %q after recreate, want v2", got)
	}
	if after.GetUID() == before.GetUID() {
		t.Error("same UID after recreate: the object was not re-created")
	}
	wantChanges(t, c.apply(t, plan, ApplyOptions{Recreate: true}), "ConfigMap frozen syncd-app unchanged")
}

// TestForbidden: an identity that may only get and patch ConfigMaps in one
// namespace gets an actionable error for a Secret. The stage is refused
// whole (nothing written); with validation off (apps[].validate: false)
// the ConfigMap of the same plan is still applied.
func TestForbidden(t *testing.T) {
	ctx := ctxT(t)
	ns := env.Namespace(t)
	admin := env.Clientset(t)
	// Creating through apply needs the create verb; the identity has only
	// get and patch, so the ConfigMap exists already (empty).
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cfg"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := env.ServiceAccountConfig(ctx, ns, "syncd")
	if err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, ns, "syncd", ns, []rbacv1.PolicyRule{{APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "patch"}}}); err != nil {
		t.Fatal(err)
	}
	c := newCluster(t, cfg)
	secret := "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\ndata:\n  password: aHVudGVyMg==\n"
	plan := c.plan(t, appOf("app", ns), configMap("cfg", map[string]string{"a": "1"}), configMap("new", map[string]string{"b": "2"}), secret)
	cs := c.apply(t, plan, ApplyOptions{})
	wantChanges(t, cs, "ConfigMap cfg syncd-app skipped", "ConfigMap new syncd-app failed", "Secret creds syncd-app failed")
	if got := data(c.get(t, configMaps, ns, "cfg")); got != nil {
		t.Errorf("ConfigMap data = %v after a refused stage, want none", got)
	}
	cs = c.apply(t, plan, ApplyOptions{SkipValidation: true})
	wantChanges(t, cs, "ConfigMap cfg syncd-app configured", "ConfigMap new syncd-app failed", "Secret creds syncd-app failed")
	// Creating through apply needs the create verb as well.
	err = cs.Changes[1].Err
	t.Logf("forbidden create: %v", err)
	for _, want := range []string{"ConfigMap " + ns + "/new", `cannot create resource "configmaps"`, "resources: [configmaps], verbs: [get, list, watch, create, patch]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	if cs.OK() {
		t.Error("OK() = true with a failed object")
	}
	err = cs.Changes[2].Err
	t.Logf("forbidden: %v", err)
	for _, want := range []string{"Secret " + ns + "/creds", `cannot get resource "secrets"`, "in namespace " + ns, "resources: [secrets]", `apiGroups: [""]`} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
	for _, secretValue := range []string{"aHVudGVyMg==", "hunter2"} {
		if err != nil && strings.Contains(err.Error(), secretValue) {
			t.Errorf("error shows the secret's value")
		}
	}
	if diff := cmp.Diff(map[string]string{"a": "1"}, data(c.get(t, configMaps, ns, "cfg"))); diff != "" {
		t.Errorf("ConfigMap data (-want +got):\n%s", diff)
	}

	// A recreate needs delete, which the identity lacks: the advice says so.
	immutable := true
	if _, err := admin.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "frozen"}, Immutable: &immutable, Data: map[string]string{"k": "v1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	frozen := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: frozen\nimmutable: true\ndata:\n  k: v2\n"
	cs = c.apply(t, c.plan(t, appOf("app", ns), frozen), ApplyOptions{Recreate: true, Policy: policyOf(t, ConflictForce)})
	wantChanges(t, cs, "ConfigMap frozen syncd-app failed")
	err = cs.Changes[0].Err
	t.Logf("forbidden delete: %v", err)
	for _, want := range []string{"ConfigMap " + ns + "/frozen", "delete to recreate (immutable data)", `cannot delete resource "configmaps"`, "verbs: [get, list, watch, create, patch, delete]"} {
		if err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("error %v does not mention %q", err, want)
		}
	}
}

// cancellingTransport cancels a context once n PATCH requests have been
// answered, so that Apply is interrupted at a precise point.
type cancellingTransport struct {
	next    http.RoundTripper
	n       int64
	patches atomic.Int64
	cancel  context.CancelFunc
}

func (c *cancellingTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	res, err := c.next.RoundTrip(req)
	if req.Method == http.MethodPatch && c.patches.Add(1) == c.n {
		c.cancel()
	}
	return res, err
}

// TestCancelledMidApply: a context cancelled part-way leaves earlier
// requests applied; a re-run converges to exactly the plan.
func TestCancelledMidApply(t *testing.T) {
	type tc struct{ n, concurrency int64 }
	for _, tc := range []tc{{1, 1}, {2, 1}, {4, 1}, {5, 1}, {6, 1}, {3, 8}, {7, 8}} {
		n := tc.n
		t.Run(fmt.Sprintf("after %d patches, concurrency %d", n, tc.concurrency), func(t *testing.T) {
			ns := env.Namespace(t)
			role := fmt.Sprintf("syncd-cancel-%s", ns)
			admin := newCluster(t, env.Config)
			t.Cleanup(func() {
				_ = admin.dyn.Resource(schema.GroupVersionResource{Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"}).Delete(context.Background(), role, metav1.DeleteOptions{})
			})
			app := webApp(ns, "syncd-web", releaseImages)
			docs := []string{
				"apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: " + role + "\nrules:\n- apiGroups: [\"\"]\n  resources: [configmaps]\n  verbs: [get]\n",
				deployment("web", 3, "nginx:1.27"),
				deployment("api", 2, "nginx:1.27"),
			}
			for i := range 3 {
				docs = append(docs, configMap(fmt.Sprintf("cm-%d", i), map[string]string{"i": fmt.Sprint(i)}))
			}
			plan := admin.plan(t, app, docs...)

			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			ct := &cancellingTransport{n: n, cancel: cancel}
			cfg := rest.CopyConfig(env.Config)
			cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { ct.next = rt; return ct })
			c := newCluster(t, cfg)
			a := c.applier(t, Options{Concurrency: int(tc.concurrency)})
			cs, err := a.Apply(ctx, plan, ApplyOptions{RecordManagers: true})
			if !errors.Is(err, context.Canceled) {
				t.Errorf("Apply after cancel: err = %v, want context.Canceled", err)
			}
			if cs == nil {
				t.Fatalf("interrupted Apply returned no ChangeSet")
			}
			t.Logf("interrupted: %v", changes(cs))
			// Graceful: an object that started finished every step; the
			// others were not started at all. No object stops half-way.
			started, skipped := map[string]bool{}, map[string]bool{}
			for _, ch := range cs.Changes {
				if ch.Action == Skipped {
					skipped[ch.Object.String()] = true
				} else {
					started[ch.Object.String()] = true
				}
			}
			for obj := range started {
				if skipped[obj] {
					t.Errorf("%s stopped half-way: some slices applied, some skipped", obj)
				}
			}
			if tc.concurrency == 1 && len(skipped) == 0 {
				t.Errorf("cancel after %d patches at concurrency 1 skipped no object", n)
			}

			cs = admin.apply(t, plan, ApplyOptions{RecordManagers: true})
			if !cs.OK() {
				t.Fatalf("re-run: %v%s", changes(cs), errs(cs))
			}
			for _, o := range plan.Objects {
				gvr := map[string]schema.GroupVersionResource{
					"ClusterRole": {Group: "rbac.authorization.k8s.io", Version: "v1", Resource: "clusterroles"},
					"Deployment":  deployments,
					"ConfigMap":   configMaps,
				}[o.Ref.Kind]
				live := admin.get(t, gvr, o.Ref.Namespace, o.Ref.Name)
				if diff := cmp.Diff(planOwners(plan, o.Ref.Name, ApplyOptions{RecordManagers: true}), without(owners(t, live), deployControllers...)); diff != "" {
					t.Errorf("%s: managedFields (-plan +live):\n%s", o.Ref, diff)
				}
				for _, f := range []string{"data", "rules"} {
					want, _, _ := unstructured.NestedFieldNoCopy(o.Desired.Object, f)
					got, _, _ := unstructured.NestedFieldNoCopy(live.Object, f)
					if diff := cmp.Diff(want, got); diff != "" {
						t.Errorf("%s: %s (-plan +live):\n%s", o.Ref, f, diff)
					}
				}
			}
			before := admin.get(t, deployments, ns, "web")
			cs = admin.apply(t, plan, ApplyOptions{RecordManagers: true})
			for _, ch := range cs.Changes {
				if ch.Action != Unchanged {
					t.Errorf("third run: %s %s %s %v", ch, ch.Manager, ch.Action, ch.Err)
				}
			}
			if t.Failed() {
				after := admin.get(t, deployments, ns, "web")
				b, _ := json.MarshalIndent(before.Object, "", " ")
				a, _ := json.MarshalIndent(after.Object, "", " ")
				t.Logf("web before the third run:\n%s\nafter:\n%s", b, a)
			}
		})
	}
}

// TestDryRun: with Options.DryRun nothing is persisted, and the change set
// previews what a real run would do, moves included.
func TestDryRun(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	dry := c.applier(t, Options{DryRun: true})
	run := func(plan *planner.Plan) *ChangeSet {
		t.Helper()
		cs, err := dry.Apply(context.Background(), plan, ApplyOptions{RecordManagers: true})
		if err != nil {
			t.Fatal(err)
		}
		if !cs.DryRun {
			t.Error("ChangeSet.DryRun = false")
		}
		return cs
	}
	split := c.plan(t, webApp(ns, "syncd-web", releaseImages), deployment("web", 3, "nginx:1.27"))
	wantChanges(t, run(split), "Deployment web syncd-web created", "Deployment web syncd-web-release created")
	if _, err := c.resource(t, deployments, ns).Get(context.Background(), "web", metav1.GetOptions{}); err == nil {
		t.Fatal("dry-run created the Deployment")
	}

	whole := c.plan(t, webApp(ns, "syncd-web"), deployment("web", 3, "nginx:1.27"))
	c.apply(t, whole, ApplyOptions{RecordManagers: true})
	before := c.get(t, deployments, ns, "web")
	wantChanges(t, run(whole), "Deployment web syncd-web unchanged")
	wantChanges(t, run(split), "Deployment web syncd-web configured", "Deployment web syncd-web-release configured")
	patched := c.plan(t, webApp(ns, "syncd-web"), deployment("web", 4, "nginx:1.27"))
	wantChanges(t, run(patched), "Deployment web syncd-web configured")
	wantUnwritten(t, "dry-run", before, c.get(t, deployments, ns, "web"))

	other := c.plan(t, config.App{Name: "other", Namespace: ns}, deployment("web", 5, "nginx:1.27"))
	cs := run(other)
	wantChanges(t, cs, "Deployment web syncd-other conflict")
	if diff := cmp.Diff(Conflicts{{Manager: "syncd-web", Path: ".spec.replicas", Operation: "Apply", App: "web"}}, cs.Changes[0].Conflicts); diff != "" {
		t.Errorf("conflicts (-want +got):\n%s", diff)
	}
}

// TestWait: with Wait, each object is polled until kstatus says Current.
func TestWait(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	cs := c.apply(t, c.plan(t, appOf("app", ns), configMap("cfg", map[string]string{"a": "1"})), ApplyOptions{Wait: true})
	if got := cs.Changes[0].Health; got != "Current" {
		t.Errorf("Health = %q, want Current", got)
	}
}

// TestNoOpAllocations: a stage whose objects the UnchangedReader answers
// as unchanged costs about one allocation an object (its target): no
// worker, no per-object timer, no client of its own, no changes of its
// own besides the ChangeSet's. Those were most of what a 10,000 object
// no-op allocated while it applied (25 an object).
func TestNoOpAllocations(t *testing.T) {
	const n = 500
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	docs := make([]string, n)
	for i := range docs {
		docs[i] = configMap(fmt.Sprintf("cm-%03d", i), map[string]string{"k": "v"})
	}
	plan := c.plan(t, webApp(ns, "syncd-web"), docs...)
	a := c.applier(t, Options{Concurrency: 16})
	skip := func(*planner.Object, *unstructured.Unstructured) bool { return true }
	ao := ApplyOptions{Live: unchangedAll{}, Skip: skip, Labels: map[string]string{"part-of": "web"}}
	var cs *ChangeSet
	allocs := testing.AllocsPerRun(3, func() {
		var err error
		if cs, err = a.Apply(context.Background(), plan, ao); err != nil {
			t.Fatal(err)
		}
	})
	if got := cs.Count("unchanged"); got != n {
		t.Fatalf("%d of %d objects unchanged", got, n)
	}
	perObject := allocs / n
	t.Logf("%.0f allocations, %.1f an object", allocs, perObject)
	if perObject > 2 {
		t.Errorf("a no-op Apply allocated %.1f times an object, want at most 2", perObject)
	}
}
