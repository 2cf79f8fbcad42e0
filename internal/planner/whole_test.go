package planner

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"syncd.dev/syncd/internal/config"
)

// TestWholeSliceMatchesExtraction: an object one manager applies whole
// shares Desired instead of being extracted from its typed value. The
// shortcut must give exactly what the extraction gives (content, field
// set, hash).
func TestWholeSliceMatchesExtraction(t *testing.T) {
	shared := 0
	for _, name := range []string{"plain", "kustomize", "crds", "split"} {
		plan, err := planDir(t, filepath.Join("testdata", "plan", name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range plan.Objects {
			if len(o.Slices) != 1 || o.Slices[0].Object != o.Desired || o.deduced {
				continue
			}
			shared++
			s := o.Slices[0]
			want, err := makeSlice(o.Desired, o.Typed(), s.Manager, s.Fields)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Object.Object, s.Object.Object); diff != "" {
				t.Errorf("%s %s: shared object differs from the extracted slice (-extracted +shared):\n%s", name, o.Ref, diff)
			}
			if !want.Fields.Equals(s.Fields) {
				t.Errorf("%s %s: fields %s, extraction gives %s", name, o.Ref, s.Fields, want.Fields)
			}
			if want.Hash != s.Hash {
				t.Errorf("%s %s: hash %s, extraction gives %s", name, o.Ref, s.Hash, want.Hash)
			}
		}
	}
	if shared < 5 {
		t.Fatalf("only %d objects took the shared path: the test checks nothing", shared)
	}

}

// TestObjectsShareTheirType: a plan keeps one type per kind, not a
// typed value per object, and Typed gives each object the typed value
// its slices were cut from (the same field set as typing Desired anew).
func TestObjectsShareTheirType(t *testing.T) {
	const docs = `apiVersion: v1
kind: ConfigMap
metadata: {name: a, namespace: ns}
data: {k: v}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: b, namespace: ns}
data: {k: w, l: x}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: d, namespace: ns}
spec: {replicas: 2, template: {spec: {containers: [{name: c, image: i}]}}}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: e, namespace: ns}
spec: {replicas: 1}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w1, namespace: ns}
spec: {size: 1}
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w2, namespace: ns}
spec: {size: 2}
`
	plan := mustPlan(t, config.App{Name: "app", Namespace: "ns"}, Options{}, docs)
	p, err := New(App{Name: "app", Namespace: "ns", Manager: "m"}, Options{})
	if err != nil {
		t.Fatal(err)
	}
	types := map[schema.GroupVersionKind]*typed.ParseableType{}
	for _, o := range plan.Objects {
		gvk := o.Ref.GVK()
		if prev, ok := types[gvk]; ok && prev != o.typ {
			t.Errorf("%s: a type of its own, not the one of the plan's other %s objects", o.Ref, gvk.Kind)
		}
		types[gvk] = o.typ
		want, _, _, err := p.toTyped(t.Context(), o.Desired, nil, nil, nil)
		if err != nil {
			t.Fatalf("%s: %v", o.Ref, err)
		}
		wantSet, _ := want.ToFieldSet()
		gotSet, err := o.Typed().ToFieldSet()
		if err != nil || !wantSet.Equals(gotSet) {
			t.Errorf("%s: Typed's fields %v (%v), typing Desired gives %v", o.Ref, gotSet, err, wantSet)
		}
	}
	if diff := cmp.Diff(3, len(types)); diff != "" {
		t.Errorf("kinds (-want +got):\n%s", diff)
	}
}
