package redact

import (
	"fmt"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/config"
)

// TestHelmValuesHidden keeps config.HelmValues printing this package's
// Marker, whatever the verb.
func TestHelmValuesHidden(t *testing.T) {
	v := config.HelmValues{"password": "hunter2"}
	for _, verb := range []string{"%v", "%s", "%+v", "%#v"} {
		if got := fmt.Sprintf(verb, v); got != Marker {
			t.Errorf("Sprintf(%q, values) = %q, want %q", verb, got, Marker)
		}
	}
	app := config.App{Name: "a", Helm: &config.HelmSpec{Values: v}}
	for _, verb := range []string{"%v", "%+v", "%#v"} {
		if got := fmt.Sprintf(verb, app); strings.Contains(got, "hunter2") {
			t.Errorf("Sprintf(%q, app) shows a value: %s", verb, got)
		}
	}
}
