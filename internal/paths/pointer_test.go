package paths

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// TestPointer: structured paths become JSON pointers into the object,
// keyed and set items resolved to their index, "/" and "~" escaped.
func TestPointer(t *testing.T) {
	obj := map[string]any{
		"metadata": map[string]any{"annotations": map[string]any{"a/b~c": "x"}},
		"spec": map[string]any{
			"containers": []any{
				map[string]any{"name": "side", "image": "a"},
				map[string]any{"name": "app", "image": "b"},
			},
			"finalizers": []any{"x", "y"},
		},
	}
	tests := map[string]struct {
		path   fieldpath.Path
		want   string
		wantOK bool
	}{
		"escaped key": {path("metadata", "annotations", "a/b~c"), "/metadata/annotations/a~1b~0c", true},
		"keyed item":  {fieldpath.MakePathOrDie("spec", "containers", key("name", "app"), "image"), "/spec/containers/1/image", true},
		"set item":    {fieldpath.MakePathOrDie("spec", "finalizers", value.NewValueInterface("y")), "/spec/finalizers/1", true},
		"missing":     {fieldpath.MakePathOrDie("spec", "containers", key("name", "gone"), "image"), "", false},
		"not a map":   {path("spec", "finalizers", "x"), "", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, ok := Pointer(obj, tc.path)
			if diff := cmp.Diff(tc.want, got); diff != "" || ok != tc.wantOK {
				t.Errorf("Pointer = %q, %v, want %q, %v", got, ok, tc.want, tc.wantOK)
			}
		})
	}
}
