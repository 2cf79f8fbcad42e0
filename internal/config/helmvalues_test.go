package config

import (
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/redact"
)

// TestHelmValuesHidden checks that HelmValues print as redact.Marker
// whatever the verb, alone and inside an App.
func TestHelmValuesHidden(t *testing.T) {
	v := HelmValues{"password": "hunter2"}
	for _, verb := range []string{"%v", "%s", "%+v", "%#v"} {
		if got := fmt.Sprintf(verb, v); got != redact.Marker {
			t.Errorf("Sprintf(%q, values) = %q, want %q", verb, got, redact.Marker)
		}
	}
	app := App{Name: "a", AppSpec: AppSpec{Helm: &HelmSpec{Values: v}}}
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		if got := fmt.Sprintf(verb, app); strings.Contains(got, "hunter2") {
			t.Errorf("Sprintf(%q, app) shows a value: %s", verb, got)
		}
	}
}

// TestHelmValuesDeepCopy: a copy shares no map or slice with the values
// it was made from (the App's generated DeepCopy relies on it).
func TestHelmValuesDeepCopy(t *testing.T) {
	orig := HelmValues{"image": map[string]any{"tag": "1.0"}, "args": []any{"a", map[string]any{"b": int64(1)}}, "n": 2}
	cp := orig.DeepCopy()
	cp["image"].(map[string]any)["tag"] = "2.0"
	cp["args"].([]any)[1].(map[string]any)["b"] = int64(2)
	cp["n"] = 3
	want := HelmValues{"image": map[string]any{"tag": "1.0"}, "args": []any{"a", map[string]any{"b": int64(1)}}, "n": 2}
	if diff := cmp.Diff(want, orig); diff != "" {
		t.Errorf("changing the copy changed the original (-want +got):\n%s", diff)
	}
	if HelmValues(nil).DeepCopy() != nil {
		t.Error("the copy of nil values is not nil")
	}
}
