package applier

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/config"
)

var services = schema.GroupVersionResource{Version: "v1", Resource: "services"}

// cmpIgnoreManagers ignores the apps' managers annotations and the
// generation, which a Deployment bumps when its annotations change.
var cmpIgnoreManagers = cmpopts.IgnoreMapEntries(func(k string, _ any) bool {
	return strings.HasPrefix(k, ManagersAnnotationPrefix) || k == "generation"
})

// applyAs applies doc with Server-Side Apply as manager, without force,
// the way another SSA tool (Flux's kustomize-controller, kubectl apply
// --server-side) does.
func (c *cluster) applyAs(t *testing.T, gvr schema.GroupVersionResource, ns, manager, doc string) *unstructured.Unstructured {
	t.Helper()
	u := object(t, doc)
	body, err := u.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	res, err := c.resource(t, gvr, ns).Patch(context.Background(), u.GetName(), types.ApplyPatchType, body, metav1.PatchOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("apply %s as %s: %v", u.GetName(), manager, err)
	}
	return res
}

// values is what a value change shows in: the object without its
// managedFields, resourceVersion and the Deployment controller's writes.
func values(u *unstructured.Unstructured) map[string]any {
	c := u.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "status")
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	unstructured.RemoveNestedField(c.Object, "metadata", "annotations", "deployment.kubernetes.io/revision")
	if len(c.GetAnnotations()) == 0 {
		unstructured.RemoveNestedField(c.Object, "metadata", "annotations")
	}
	return c.Object
}

const sameValueDeployment = `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  minReadySeconds: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
        env:
        - name: POD
          valueFrom:
            fieldRef:
              fieldPath: metadata.name
`

const sameValueService = `apiVersion: v1
kind: Service
metadata:
  name: web
spec:
  selector: {app: web}
  ports:
  - port: 80
    targetPort: 8080
`

// TestSameValueConflicts: an object last applied by another SSA manager
// from the very same manifest conflicts on zero values the server does
// not store and on fields it defaults. syncd under fail takes those
// fields without changing any value, and its plan predicts no conflict;
// a field whose value would change is still a conflict.
func TestSameValueConflicts(t *testing.T) {
	tests := map[string]struct {
		gvr     schema.GroupVersionResource
		doc     string
		other   string
		minSame int // at least this many same-value conflicts
	}{
		"Deployment with minReadySeconds 0 and a fieldRef, after kustomize-controller": {
			gvr: deployments, doc: sameValueDeployment, other: "kustomize-controller", minSame: 2,
		},
		"Deployment after kubectl apply --server-side": {
			gvr: deployments, doc: sameValueDeployment, other: "kubectl", minSame: 2,
		},
		"Service with a port without protocol": {
			gvr: services, doc: sameValueService, other: "kustomize-controller",
		},
		"ConfigMap": {
			gvr: configMaps, doc: configMap("web", map[string]string{"color": "red", "empty": ""}), other: "kubectl",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			c.applyAs(t, tc.gvr, ns, tc.other, tc.doc)
			before := c.get(t, tc.gvr, ns, "web")
			plan := c.plan(t, appOf("app", ns), tc.doc)
			ao := ApplyOptions{Policy: policyOf(t, ConflictFail)}

			previews, err := c.applier(t, Options{DryRun: true}).Preview(ctxT(t), plan, ao)
			if err != nil {
				t.Fatal(err)
			}
			for _, ch := range previews[0].Changes {
				if len(ch.Conflicts) > 0 || ch.Action == Conflicted || ch.Action == Failed {
					t.Errorf("preview: %s with conflicts %v: %v", ch, ch.Conflicts, ch.Err)
				}
			}

			cs := c.apply(t, plan, ao)
			if !cs.OK() {
				t.Fatalf("apply under fail: %v%s", changes(cs), errs(cs))
			}
			ch := cs.Changes[0]
			t.Logf("%s; same value: %v; changed: %v", ch, ch.Resolution().SameValue, ch.Changed)
			if len(ch.Resolution().SameValue) < tc.minSame {
				t.Errorf("same-value conflicts %v, want at least %d", ch.Resolution().SameValue, tc.minSame)
			}
			if diff := cmp.Diff(previews[0].Changes[0].Resolution().SameValue, ch.Resolution().SameValue, ignoreTime); diff != "" {
				t.Errorf("same-value conflicts: preview (-) and apply (+) differ:\n%s", diff)
			}
			after := c.get(t, tc.gvr, ns, "web")
			if diff := cmp.Diff(values(before), values(after)); diff != "" {
				t.Errorf("taking the fields changed values (-before +after):\n%s", diff)
			}
			if before.GetGeneration() != after.GetGeneration() {
				t.Errorf("generation %d -> %d", before.GetGeneration(), after.GetGeneration())
			}
			// A second apply finds nothing to do.
			wantChanges(t, c.apply(t, plan, ao), changes(cs)[0][:strings.LastIndex(changes(cs)[0], " ")]+" unchanged")
		})
	}
}

// TestSameValueAndRealConflict: with one field whose value differs, fail
// leaves the object untouched and reports only that field; yield leaves
// it to the other manager and takes the same-value fields.
func TestSameValueAndRealConflict(t *testing.T) {
	differ := strings.Replace(sameValueDeployment, "nginx:1.27", "nginx:1.28", 1)
	image := `.spec.template.spec.containers[name="app"].image`
	tests := map[string]struct {
		policy     ConflictAction
		want       Action
		wantImage  string
		wantSame   bool
		wantWrites bool
	}{
		"fail": {policy: ConflictFail, want: Conflicted, wantImage: "nginx:1.27"},
		"yield": {
			policy: ConflictYield, want: Yielded, wantImage: "nginx:1.27", wantSame: true, wantWrites: true,
		},
		"force": {
			policy: ConflictForce, want: Forced, wantImage: "nginx:1.28", wantSame: true, wantWrites: true,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			c.applyAs(t, deployments, ns, "kustomize-controller", sameValueDeployment)
			before := c.get(t, deployments, ns, "web")
			cs := c.apply(t, c.plan(t, appOf("app", ns), differ), ApplyOptions{Policy: policyOf(t, tc.policy)})
			ch := cs.Changes[0]
			t.Logf("%s: conflicts %v, yielded %v, forced %v, same value %v, changed %v", ch, ch.Conflicts, ch.Resolution().Yielded, ch.Resolution().Forced, ch.Resolution().SameValue, ch.Changed)
			if ch.Action != tc.want {
				t.Fatalf("action %s, want %s%s", ch.Action, tc.want, errs(cs))
			}
			real := Conflicts{{Manager: "kustomize-controller", Path: image, Operation: "Apply"}}
			got := ch.Conflicts
			switch tc.policy {
			case ConflictYield:
				got = ch.Resolution().Yielded
			case ConflictForce:
				got = ch.Resolution().Forced
			}
			if diff := cmp.Diff(real, got, ignoreTime); diff != "" {
				t.Errorf("the real conflict (-want +got):\n%s", diff)
			}
			if (len(ch.Resolution().SameValue) > 0) != tc.wantSame {
				t.Errorf("same-value conflicts %v, want some: %v", ch.Resolution().SameValue, tc.wantSame)
			}
			after := c.get(t, deployments, ns, "web")
			// The Deployment controller writes status meanwhile: compare
			// what syncd can write, values and owners.
			if wrote := !cmp.Equal(written(t, before), written(t, after)); wrote != tc.wantWrites {
				t.Errorf("object written: %v, want %v", wrote, tc.wantWrites)
			}
			img, _, _ := unstructured.NestedSlice(after.Object, "spec", "template", "spec", "containers")
			if got := img[0].(map[string]any)["image"]; got != tc.wantImage {
				t.Errorf("image %v, want %s", got, tc.wantImage)
			}
			if got, _, _ := unstructured.NestedInt64(after.Object, "spec", "minReadySeconds"); got != 0 {
				t.Errorf("minReadySeconds %d, want 0", got)
			}
		})
	}
}

// TestTwoAppsOneIdenticalDeployment: a second app declaring the same
// Deployment leaves the same-value fields to the first app's manager
// (the managers annotation says it is an app's) instead of taking them:
// taking would have each app take them back on its every sync.
func TestTwoAppsOneIdenticalDeployment(t *testing.T) {
	c := newCluster(t, env.Config)
	ns := env.Namespace(t)
	a, b := appOf("a", ns), appOf("b", ns)
	ao := ApplyOptions{Policy: policyOf(t, ConflictFail), RecordManagers: true}
	wantChanges(t, c.apply(t, c.plan(t, a, sameValueDeployment), ao), "Deployment web syncd-a created")
	before := c.get(t, deployments, ns, "web")
	var got []string
	var settled map[string][]string // owners after b's first apply
	for i, app := range []config.App{b, a, b, a} {
		cs := c.apply(t, c.plan(t, app, sameValueDeployment), ao)
		if !cs.OK() {
			t.Fatalf("%s: %v%s", app.Name, changes(cs), errs(cs))
		}
		got = append(got, changes(cs)...)
		ch := cs.Changes[0]
		t.Logf("%s; same value taken %v, left %v; changed %v", ch, ch.Resolution().SameValue, ch.Resolution().SameValueLeft, ch.Changed)
		if len(ch.Resolution().SameValue) > 0 {
			t.Errorf("run %d: %s took %v from the other app", i, app.Name, ch.Resolution().SameValue)
		}
		if i == 0 && len(ch.Resolution().SameValueLeft) < 2 {
			t.Errorf("b left %v to syncd-a, want minReadySeconds and the fieldRef", ch.Resolution().SameValueLeft)
		}
		// After b's first apply no run may move a field: the apps do not
		// take fields from each other. (The API server now and then
		// rewrites an applier's managedFields time on a no-op apply while
		// the Deployment controller writes status beside it; that write is
		// reported as configured with "metadata", truthfully, so the
		// actions of the later runs are not asserted, the owners are.)
		now := owners(t, c.get(t, deployments, ns, "web"))
		delete(now, "kube-controller-manager (Update/status)")
		if i == 0 {
			settled = now
		} else if diff := cmp.Diff(settled, now); diff != "" {
			t.Errorf("run %d (%s) moved fields (-after b's first apply +now):\n%s", i, app.Name, diff)
		}
		if i > 0 {
			for _, f := range ch.Changed {
				if f != "metadata" {
					t.Errorf("run %d (%s) changed %s", i, app.Name, f)
				}
			}
		}
	}
	if got[0] != "Deployment web syncd-b configured" {
		t.Errorf("b's first apply: %s, want configured", got[0])
	}
	if diff := cmp.Diff(values(before), values(c.get(t, deployments, ns, "web")), cmpIgnoreManagers); diff != "" {
		t.Errorf("values changed (-before +after):\n%s", diff)
	}
}
