package paths

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

func TestLookup(t *testing.T) {
	obj := map[string]any{
		"spec": map[string]any{
			"replicas": int64(2),
			"args":     []any{"a", "b"},
			"ports": []any{
				map[string]any{"containerPort": int64(80), "protocol": "TCP", "name": "http"},
				map[string]any{"containerPort": int64(53), "name": "dns"},
				map[string]any{"containerPort": int64(53), "protocol": "UDP", "name": "dns-udp"},
			},
		},
		"metadata": map[string]any{"finalizers": []any{"x/y"}},
	}
	port := func(n int64, protocol string) fieldpath.PathElement {
		return fieldpath.KeyElementByFields("containerPort", n, "protocol", protocol)
	}
	finalizer := fieldpath.ValueElement(value.NewValueInterface("x/y"))
	type want struct {
		V  any
		OK bool
	}
	tests := map[string]struct {
		path    fieldpath.Path
		options LookupOptions
		want    want
	}{
		"field":                             {path: path("spec", "replicas"), want: want{int64(2), true}},
		"missing field":                     {path: path("spec", "paused"), want: want{nil, false}},
		"field of a scalar":                 {path: path("spec", "replicas", "x"), want: want{nil, false}},
		"index":                             {path: path("spec", "args", 1), want: want{"b", true}},
		"index past the end":                {path: path("spec", "args", 2), want: want{nil, false}},
		"negative index":                    {path: path("spec", "args", -1), want: want{nil, false}},
		"index of a map":                    {path: path("spec", 0), want: want{nil, false}},
		"set value":                         {path: path("metadata", "finalizers", finalizer), want: want{"x/y", true}},
		"whole key":                         {path: path("spec", "ports", port(80, "TCP"), "name"), want: want{"http", true}},
		"key field omitted":                 {path: path("spec", "ports", port(53, "TCP"), "name"), want: want{nil, false}},
		"key field omitted, allowed":        {path: path("spec", "ports", port(53, "TCP"), "name"), options: LookupOptions{OmittedKeyFields: true}, want: want{"dns", true}},
		"key field differs, allowed":        {path: path("spec", "ports", port(80, "UDP"), "name"), options: LookupOptions{OmittedKeyFields: true}, want: want{nil, false}},
		"whole key before omitted, allowed": {path: path("spec", "ports", port(53, "UDP"), "name"), options: LookupOptions{OmittedKeyFields: true}, want: want{"dns-udp", true}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			v, ok := LookupWith(obj, tt.path, tt.options)
			if diff := cmp.Diff(tt.want, want{v, ok}); diff != "" {
				t.Errorf("LookupWith(%s) (-want +got):\n%s", tt.path, diff)
			}
		})
	}
}

func TestItemIndex(t *testing.T) {
	l := []any{map[string]any{"name": "a", "port": int64(80)}, map[string]any{"name": "b"}, "x"}
	idx := func(i int) fieldpath.PathElement { return fieldpath.PathElement{Index: &i} }
	key := func(name string) fieldpath.PathElement {
		return fieldpath.PathElement{Key: fieldpath.KeyByFields("name", name)}
	}
	x := value.NewValueInterface("x")
	tests := map[string]struct {
		pe   fieldpath.PathElement
		want int
	}{
		"index":          {idx(1), 1},
		"negative index": {idx(-2), -1},
		"past the end":   {idx(3), -1},
		"whole key":      {key("b"), 1},
		"missing key":    {key("c"), -1},
		"set value":      {fieldpath.PathElement{Value: &x}, 2},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ItemIndex(l, tc.pe); got != tc.want {
				t.Errorf("ItemIndex = %d, want %d", got, tc.want)
			}
		})
	}
}

// TestLookupStored: a Secret's .stringData.K is read where the API server
// stores it, .data.K, decoded; anything else as Lookup finds it.
func TestLookupStored(t *testing.T) {
	secret := map[string]any{"data": map[string]any{"password": "cm90YXRlZA==", "raw": "not base64!"}}
	type want struct {
		V  any
		OK bool
	}
	tests := map[string]struct {
		path   fieldpath.Path
		secret bool
		want   want
	}{
		"stringData of a Secret":        {path: path("stringData", "password"), secret: true, want: want{"rotated", true}},
		"stringData not base64 in data": {path: path("stringData", "raw"), secret: true, want: want{"not base64!", true}},
		"stringData missing in data":    {path: path("stringData", "token"), secret: true, want: want{nil, false}},
		"stringData of another kind":    {path: path("stringData", "password"), want: want{nil, false}},
		"data of a Secret":              {path: path("data", "password"), secret: true, want: want{"cm90YXRlZA==", true}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v, ok := LookupStored(secret, tc.path, tc.secret, LookupOptions{})
			if diff := cmp.Diff(tc.want, want{v, ok}); diff != "" {
				t.Errorf("LookupStored (-want +got):\n%s", diff)
			}
		})
	}
}
