package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

func TestEqualDeclared(t *testing.T) {
	tests := map[string]struct {
		desired, live any
		want          bool
	}{
		"same string":                     {"blue", "blue", true},
		"other string":                    {"blue", "green", false},
		"int and float":                   {int64(3), float64(3), true},
		"int and other float":             {int64(3), 3.5, false},
		"milli cpu and decimal":           {"500m", "0.5", true},
		"number and quantity string":      {int64(1), "1", true},
		"memory units":                    {"1Gi", "1024Mi", true},
		"different quantity":              {"500m", "250m", false},
		"image tags are not quantities":   {"v1.4", "v1.5", false},
		"defaulted key not compared":      {map[string]any{"a": "x"}, map[string]any{"a": "x", "b": "default"}, true},
		"declared key differs":            {map[string]any{"a": "x"}, map[string]any{"a": "y"}, false},
		"declared key missing":            {map[string]any{"a": "x"}, map[string]any{}, false},
		"lists item by item":              {[]any{"a", int64(1)}, []any{"a", 1.0}, true},
		"lists of other length":           {[]any{"a"}, []any{"a", "b"}, false},
		"absent live":                     {"x", nil, false},
		"bool":                            {true, true, true},
		"bool and string":                 {true, "true", false},
		"empty map declared, live absent": {map[string]any{}, nil, true},
		// The API server does not store zero values of omitempty fields.
		"false, live absent":                {false, nil, true},
		"zero int, live absent":             {int64(0), nil, true},
		"zero float, live absent":           {0.0, nil, true},
		"empty string, live absent":         {"", nil, true},
		"empty list, live absent":           {[]any{}, nil, true},
		"zero key of a map, live absent":    {map[string]any{"apiVersion": "", "fieldPath": "metadata.name"}, map[string]any{"fieldPath": "metadata.name"}, true},
		"false in a list item, absent":      {[]any{map[string]any{"name": "x", "readOnly": false}}, []any{map[string]any{"name": "x"}}, true},
		"true, live absent":                 {true, nil, false},
		"one, live absent":                  {int64(1), nil, false},
		"string zero, live absent":          {"0", nil, false},
		"string false, live absent":         {"false", nil, false},
		"zero, live other value":            {int64(0), int64(5), false},
		"false, live true":                  {false, true, false},
		"empty string, live other":          {"", "x", false},
		"empty map, live not a map":         {map[string]any{}, "x", false},
		"empty list, live other list":       {[]any{}, []any{"a"}, false},
		"non-empty list, live absent":       {[]any{"a"}, nil, false},
		"non-empty map, live absent":        {map[string]any{"a": "x"}, nil, false},
		"zero in a list is kept positional": {[]any{"", "a"}, []any{"a"}, false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := equalDeclared(tt.desired, tt.live); got != tt.want {
				t.Errorf("equalDeclared(%v, %v) = %v, want %v", tt.desired, tt.live, got, tt.want)
			}
		})
	}
}

// The ownership half of this test (key subsets, atomic ancestors, owners
// of an empty map) is ownership.TestOwns and TestOwnsItself.
func TestLookupKeySubset(t *testing.T) {
	declaredPort := fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80), "targetPort")
	live := map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"port": int64(80), "protocol": "TCP", "targetPort": int64(8080)},
	}}}
	got, ok := lookup(live, declaredPort)
	if diff := cmp.Diff(any(int64(8080)), got); diff != "" || !ok {
		t.Errorf("lookup(%s) ok=%v (-want +got):\n%s", declaredPort, ok, diff)
	}
}
