package config

import (
	"fmt"
	"strings"
	"testing"

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
