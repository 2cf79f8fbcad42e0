package preview

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
)

func seedData(data map[string]any) *unstructured.Unstructured {
	return &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "v1", "kind": "ConfigMap",
		"metadata": map[string]any{"name": "seed", "namespace": "ns", "resourceVersion": "7"},
		"data":     data,
	}}
}

func TestOnlyIgnored(t *testing.T) {
	color := fieldpath.MakePathOrDie("data", "color")
	live := seedData(map[string]any{"color": "green", "size": "s"})
	tests := map[string]struct {
		obj     Object
		after   *unstructured.Unstructured
		ignored []fieldpath.Path
		want    bool
	}{
		"only the ignored field differs": {
			obj: Object{Action: Update}, after: seedData(map[string]any{"color": "blue", "size": "s"}),
			ignored: []fieldpath.Path{color}, want: true,
		},
		"another field differs too": {
			obj: Object{Action: Update}, after: seedData(map[string]any{"color": "blue", "size": "xl"}),
			ignored: []fieldpath.Path{color},
		},
		"no ignored field": {
			obj: Object{Action: Update}, after: seedData(map[string]any{"color": "blue", "size": "s"}),
		},
		"an ownership move is a change": {
			obj:   Object{Action: Update, Ownership: []Move{{Path: ".data.size", From: "a", To: "b"}}},
			after: seedData(map[string]any{"color": "blue", "size": "s"}), ignored: []fieldpath.Path{color},
		},
		"a conflict is a change": {
			obj:   Object{Action: Update, Conflicts: []Conflict{{Path: ".data.size", Manager: "a", Outcome: OutcomeFail}}},
			after: seedData(map[string]any{"color": "blue", "size": "s"}), ignored: []fieldpath.Path{color},
		},
		"a create is a change": {
			obj: Object{Action: Create}, after: seedData(map[string]any{"color": "blue", "size": "s"}),
			ignored: []fieldpath.Path{color},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			p := applier.ObjectPreview{Live: live, After: tc.after}
			if got := onlyIgnored(tc.obj, p, tc.ignored); got != tc.want {
				t.Errorf("onlyIgnored = %v, want %v", got, tc.want)
			}
			if tc.after.Object["data"].(map[string]any)["color"] != "blue" {
				t.Errorf("onlyIgnored changed the dry run's object")
			}
		})
	}
}

func TestChangedOnlyIgnored(t *testing.T) {
	tests := map[string]struct {
		s    Summary
		want bool
	}{
		"only ignored updates":   {Summary{Update: 2, OnlyIgnored: 2}, false},
		"one real update":        {Summary{Update: 2, OnlyIgnored: 1}, true},
		"a create and no update": {Summary{Create: 1}, true},
		"nothing":                {Summary{Unchanged: 3}, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := (&Report{Summary: tc.s}).Changed(); got != tc.want {
				t.Errorf("Changed() = %v, want %v", got, tc.want)
			}
		})
	}
}
