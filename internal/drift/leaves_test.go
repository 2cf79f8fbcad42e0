package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
)

// TestLeavesOfReusesUnchangedSlices: a new plan's object whose slices are
// the previous plan's (same managers, same hashes) keeps the leaves the
// watcher computed before (watchedFrom); a changed value, or another split
// of the object, gets its leaves computed afresh, equal to declaredLeaves.
func TestLeavesOfReusesUnchangedSlices(t *testing.T) {
	app := config.App{Name: "a", Namespace: "ns"}
	split := config.App{Name: "a", Namespace: "ns", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "syncd-replicas", Paths: []string{".spec.replicas"}}}}}
	const was = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: "a:1"}]}}}}`
	const image2 = `{apiVersion: apps/v1, kind: Deployment, metadata: {name: web}, spec: {replicas: 2, selector: {matchLabels: {app: web}}, template: {metadata: {labels: {app: web}}, spec: {containers: [{name: app, image: "a:2"}]}}}}`
	prevObj := &mustPlan(t, app, was).Objects[0]
	prev, err := watchedFrom(prevObj, nil, declaredPaths{})
	if err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		app   config.App
		doc   string
		reuse bool
	}{
		"same slices":   {app: app, doc: was, reuse: true},
		"value changed": {app: app, doc: image2},
		"split anew":    {app: split, doc: was},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			o := &mustPlan(t, tc.app, tc.doc).Objects[0]
			wo, err := watchedFrom(o, prev, declaredPaths{})
			if err != nil {
				t.Fatal(err)
			}
			got := wo.decl.leaves
			if reused := len(got) > 0 && &got[0] == &prev.decl.leaves[0]; reused != tc.reuse {
				t.Errorf("reused the previous leaves = %v, want %v", reused, tc.reuse)
			}
			want := declaredLeaves(o, nil)
			if diff := cmp.Diff(want, got, cmp.AllowUnexported(declared{}), cmp.Comparer(func(a, b fieldpath.Path) bool { return a.String() == b.String() })); diff != "" {
				t.Errorf("leaves (-want +got):\n%s", diff)
			}
		})
	}
	if got := declaredLeaves(prevObj, nil); len(got) != len(prev.decl.leaves) {
		t.Errorf("without a previous object: %d leaves, want %d", len(prev.decl.leaves), len(got))
	}
}

// TestDeclaredPathsShared: the objects of one plan that declare the same
// field keep one copy of its path (declaredPaths), and each object's
// leaves are still its own, with its own values.
func TestDeclaredPathsShared(t *testing.T) {
	plan := mustPlan(t, config.App{Name: "a", Namespace: "ns"},
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: one}, data: {color: blue}}`,
		`{apiVersion: v1, kind: ConfigMap, metadata: {name: two}, data: {color: red}}`)
	paths := declaredPaths{}
	var leaves [][]declared
	for i := range plan.Objects {
		wo, err := watchedFrom(&plan.Objects[i], nil, paths)
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(declaredLeaves(&plan.Objects[i], nil), wo.decl.leaves, cmp.AllowUnexported(declared{}), cmp.Comparer(func(a, b fieldpath.Path) bool { return a.String() == b.String() })); diff != "" {
			t.Errorf("%s: leaves (-copied +shared):\n%s", plan.Objects[i].Ref, diff)
		}
		leaves = append(leaves, wo.decl.leaves)
	}
	if len(leaves[0]) == 0 || len(leaves[0]) != len(leaves[1]) {
		t.Fatalf("leaves: %d and %d", len(leaves[0]), len(leaves[1]))
	}
	for i := range leaves[0] {
		if a, b := leaves[0][i].path, leaves[1][i].path; &a[0] != &b[0] {
			t.Errorf("%s: two copies of the path", leaves[0][i].str)
		}
	}
}
