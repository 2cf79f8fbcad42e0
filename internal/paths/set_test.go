package paths

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestSet(t *testing.T) {
	image := fieldpath.MakePathOrDie("spec", "containers", fieldpath.KeyByFields("name", "app"), "image")
	tests := map[string]struct {
		path fieldpath.Path
		ok   bool
		want any
	}{
		"keyed item field": {path: image, ok: true, want: "nginx:live"},
		"missing field":    {path: fieldpath.MakePathOrDie("spec", "replicas"), ok: false, want: nil},
		"missing item":     {path: fieldpath.MakePathOrDie("spec", "containers", fieldpath.KeyByFields("name", "other"), "image"), ok: false, want: nil},
		"index":            {path: fieldpath.MakePathOrDie("spec", "args", 1), ok: true, want: "nginx:live"},
		"empty path":       {path: fieldpath.Path{}, ok: false, want: nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := map[string]any{"spec": map[string]any{
				"containers": []any{map[string]any{"name": "app", "image": "nginx:git"}},
				"args":       []any{"a", "b"},
			}}
			if ok := Set(obj, tc.path, "nginx:live"); ok != tc.ok {
				t.Fatalf("Set = %v, want %v", ok, tc.ok)
			}
			if !tc.ok {
				return
			}
			got, _ := Lookup(obj, tc.path)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("value after Set (-want +got):\n%s", diff)
			}
		})
	}
}
