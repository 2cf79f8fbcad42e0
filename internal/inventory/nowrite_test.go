package inventory

import (
	"context"
	"fmt"
	"net/http"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// writeKind is one kind whose objects others write after syncd applied
// them: its manifest (for a unique suffix), its resource, whether the API
// server writes its status by itself, and the status patch the test
// writes in place of a controller that does not run here
// (kube-controller-manager runs only the garbage collector and the
// namespace controller in this package's tests).
type writeKind struct {
	doc         func(suffix string) string
	name        func(suffix string) string
	gvr         schema.GroupVersionResource
	status      bool
	statusPatch string
}

var noWriteKinds = map[string]writeKind{
	"ValidatingAdmissionPolicy (the type checker writes status)": {
		doc: func(s string) string {
			return "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: replicas-" + s + "}\n" +
				"spec:\n  failurePolicy: Fail\n  matchConstraints:\n    resourceRules:\n    - {apiGroups: [nowrite.example.com], apiVersions: [v1], operations: [CREATE], resources: [things]}\n" +
				"  validations:\n  - expression: \"object.spec.replicas <= 5\"\n"
		},
		name:        func(s string) string { return "replicas-" + s },
		gvr:         schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingadmissionpolicies"},
		statusPatch: `{"status":{"observedGeneration":1,"typeChecking":{}}}`,
	},
	"CustomResourceDefinition (the API server writes its conditions)": {
		doc: func(s string) string {
			return "apiVersion: apiextensions.k8s.io/v1\nkind: CustomResourceDefinition\nmetadata: {name: things" + s + ".nowrite.example.com}\n" +
				"spec:\n  group: nowrite.example.com\n  scope: Namespaced\n  names: {plural: things" + s + ", singular: thing" + s + ", kind: Thing" + s + "}\n" +
				"  versions:\n  - name: v1\n    served: true\n    storage: true\n    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}\n"
		},
		name:   func(s string) string { return "things" + s + ".nowrite.example.com" },
		gvr:    schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"},
		status: true,
	},
	"APIService (the availability controller writes status)": {
		doc: func(s string) string {
			return "apiVersion: apiregistration.k8s.io/v1\nkind: APIService\nmetadata: {name: v1.g" + s + ".nowrite.example.com}\n" +
				"spec: {group: g" + s + ".nowrite.example.com, version: v1, groupPriorityMinimum: 1000, versionPriority: 15}\n"
		},
		name:   func(s string) string { return "v1.g" + s + ".nowrite.example.com" },
		gvr:    schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"},
		status: true,
	},
	"ValidatingWebhookConfiguration (no status; another manager's metadata only)": {
		doc: func(s string) string {
			return "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingWebhookConfiguration\nmetadata: {name: hook-" + s + "}\n" +
				"webhooks:\n- name: hook.nowrite.example.com\n  admissionReviewVersions: [v1]\n  sideEffects: None\n" +
				"  clientConfig: {url: \"https://127.0.0.1:1/validate\"}\n" +
				"  rules:\n  - {apiGroups: [nowrite.example.com], apiVersions: [v1], operations: [CREATE], resources: [things]}\n"
		},
		name: func(s string) string { return "hook-" + s },
		gvr:  schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"},
	},
	"Deployment (the Deployment controller writes status and its revision annotation)": {
		doc: func(s string) string {
			return "apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web-" + s + "}\n" +
				"spec: {selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: nginx}]}}}\n"
		},
		name:        func(s string) string { return "web-" + s },
		gvr:         schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"},
		statusPatch: `{"metadata":{"annotations":{"deployment.kubernetes.io/revision":"1"}},"status":{"observedGeneration":1,"replicas":1}}`,
	},
}

// TestNoWriteAfterOthersWrote: after syncd applied an object, the API
// server or a controller writes its status and another manager writes its
// metadata; the next sync of the unchanged plan sends no write request
// for the object and reports it unchanged, for every kind. The decision
// is on syncd's own managedFields entries, not on the resourceVersion
// those writes moved. A second app that declares the same object with
// the same values (an overlap) re-applies with no write either, and
// neither does the first after it.
func TestNoWriteAfterOthersWrote(t *testing.T) {
	for name, k := range noWriteKinds {
		t.Run(name, func(t *testing.T) {
			a := newFixture(t, config.App{Name: "a"}, Options{})
			suffix := strings.ToLower(a.ns)
			ref := func(f *fixture) string {
				if k.gvr.Resource == "deployments" {
					return f.ns
				}
				return ""
			}
			a.mustSync(a.plan(k.doc(suffix)))
			ri := a.dyn.Resource(k.gvr).Namespace(ref(a))
			if k.statusPatch != "" {
				if _, err := ri.Patch(context.Background(), k.name(suffix), types.MergePatchType, []byte(k.statusPatch), metav1.PatchOptions{FieldManager: "status-writer"}, "status"); err != nil {
					t.Fatal(err)
				}
				if strings.Contains(k.statusPatch, "annotations") {
					if _, err := ri.Patch(context.Background(), k.name(suffix), types.MergePatchType, []byte(k.statusPatch), metav1.PatchOptions{FieldManager: "status-writer"}); err != nil {
						t.Fatal(err)
					}
				}
			}
			if k.status {
				waitStatus(t, a, k.gvr, ref(a), k.name(suffix))
			}
			patch := `{"metadata":{"annotations":{"nowrite.example.com/seen":"yes"}}}`
			if _, err := ri.Patch(context.Background(), k.name(suffix), types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "some-controller"}); err != nil {
				t.Fatal(err)
			}
			wantNoWrite(t, a, a.plan(k.doc(suffix)), k.gvr.Resource)

			// A second app declares the same object with the same
			// values: its first apply shares the fields; then neither
			// app writes again.
			b := newFixture(t, config.App{Name: "b"}, Options{})
			b.ns, b.app.Namespace = a.ns, a.ns
			b.mustSync(b.plan(k.doc(suffix)))
			wantNoWrite(t, b, b.plan(k.doc(suffix)), k.gvr.Resource)
			wantNoWrite(t, a, a.plan(k.doc(suffix)), k.gvr.Resource)
		})
	}
}

// waitStatus waits until the object has a status written by someone else.
func waitStatus(t *testing.T, f *fixture, gvr schema.GroupVersionResource, ns, name string) {
	t.Helper()
	err := wait.PollUntilContextTimeout(context.Background(), 50*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
		u, err := f.dyn.Resource(gvr).Namespace(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		st, _ := u.Object["status"].(map[string]any)
		return len(st) > 0, nil
	})
	if err != nil {
		t.Fatalf("%s %s never got a status: %v", gvr.Resource, name, err)
	}
}

// wantNoWrite syncs plan and fails when the sync sent a write request
// for an object of resource (the inventory's own Secret writes are not
// counted) or reported an object other than unchanged.
func wantNoWrite(t *testing.T, f *fixture, plan *planner.Plan, resource string) {
	t.Helper()
	f.count.reset()
	f.count.on.Store(true)
	cs, _, err := f.sync(context.Background(), plan)
	f.count.on.Store(false)
	if err != nil || !cs.OK() {
		t.Fatalf("sync of app %s: %v%s", f.app.Name, err, changeErrs(cs))
	}
	for _, c := range cs.Changes {
		if c.Action != applier.Unchanged {
			t.Errorf("app %s: %s as %s %s (changed: %v), want unchanged", f.app.Name, c.Object, c.Manager, c.Action, c.Changed)
		}
	}
	f.count.mu.Lock()
	defer f.count.mu.Unlock()
	for _, l := range f.count.lines {
		if !strings.HasPrefix(l, http.MethodGet+" ") && strings.Contains(l, "/"+resource+"/") {
			t.Errorf("app %s sent a write request for the unchanged object: %s", f.app.Name, l)
		}
	}
}

// changeErrs lists the errors of a change set.
func changeErrs(cs *applier.ChangeSet) string {
	if cs == nil {
		return ""
	}
	var b strings.Builder
	for _, c := range cs.Changes {
		if c.Err != nil {
			fmt.Fprintf(&b, "\n  %s: %v", c.Object, c.Err)
		}
	}
	return b.String()
}
