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

func TestOwnsAndLookup(t *testing.T) {
	set := &fieldpath.Set{}
	// The server's set: the ports item carries the defaulted protocol in
	// its key; .spec.selector is atomic (owned whole).
	if err := set.FromJSON(stringReader(`{"f:spec":{"f:ports":{"k:{\"port\":80,\"protocol\":\"TCP\"}":{".":{},"f:port":{},"f:targetPort":{}}},"f:selector":{}}}`)); err != nil {
		t.Fatal(err)
	}
	declaredPort := fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 80), "targetPort")
	tests := map[string]struct {
		path fieldpath.Path
		want bool
	}{
		"key subset matches defaulted key": {declaredPort, true},
		"atomic ancestor":                  {fieldpath.MakePathOrDie("spec", "selector", "app"), true},
		"not owned":                        {fieldpath.MakePathOrDie("spec", "type"), false},
		"other item":                       {fieldpath.MakePathOrDie("spec", "ports", fieldpath.KeyByFields("port", 81), "targetPort"), false},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if got := owns(set, tt.path); got != tt.want {
				t.Errorf("owns(%s) = %v, want %v", tt.path, got, tt.want)
			}
		})
	}

	// An empty map declared in Git is owned by who owns the map itself,
	// not by the managers of keys inside it.
	decode := func(js string) *fieldpath.Set {
		s := &fieldpath.Set{}
		if err := s.FromJSON(stringReader(js)); err != nil {
			t.Fatal(err)
		}
		return s
	}
	annotations := fieldpath.MakePathOrDie("metadata", "annotations")
	for name, tt := range map[string]struct {
		set  *fieldpath.Set
		path fieldpath.Path
		want bool
	}{
		"the manager of the map":           {decode(`{"f:metadata":{"f:annotations":{}}}`), annotations, true},
		"the manager of a key below":       {decode(`{"f:metadata":{"f:annotations":{"f:deployment.kubernetes.io/revision":{}}}}`), annotations, false},
		"the manager of the map and a key": {decode(`{"f:metadata":{"f:annotations":{".":{},"f:x":{}}}}`), annotations, true},
		"an atomic ancestor owned whole":   {set, fieldpath.MakePathOrDie("spec", "selector", "matchLabels"), true},
		"list items below, not the list":   {set, fieldpath.MakePathOrDie("spec", "ports"), false},
	} {
		if got := ownsItself(tt.set, tt.path); got != tt.want {
			t.Errorf("%s: ownsItself(%s) = %v, want %v", name, tt.path, got, tt.want)
		}
	}

	live := map[string]any{"spec": map[string]any{"ports": []any{
		map[string]any{"port": int64(80), "protocol": "TCP", "targetPort": int64(8080)},
	}}}
	got, ok := lookup(live, declaredPort)
	if diff := cmp.Diff(any(int64(8080)), got); diff != "" || !ok {
		t.Errorf("lookup(%s) ok=%v (-want +got):\n%s", declaredPort, ok, diff)
	}
}
