package reconcile

import (
	"context"
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

// TestSubstitutionValues reads variables from a file and from the config:
// a value keeps its inner newlines and loses only those it ends with.
func TestSubstitutionValues(t *testing.T) {
	file := filepath.Join(t.TempDir(), "vars.yaml")
	vars := "CERT: |\n  -----BEGIN CERTIFICATE-----\n  MIIB\n  -----END CERTIFICATE-----\nPASSWORD: 'Tr0ub4dor #3 horse'\n"
	if err := os.WriteFile(file, []byte(vars), 0o600); err != nil {
		t.Fatal(err)
	}
	app := config.App{Name: "web",
		SubstituteFrom: []config.SubstituteSource{{File: file, Sensitive: true}},
		AppSpec:        config.AppSpec{Substitute: map[string]config.SubstituteValue{"LINES": "one\n  two\n\n"}},
	}
	s, err := OfflineSubstitution(context.Background(), app)
	if err != nil {
		t.Fatal(err)
	}
	got := map[string]string{}
	for name, v := range s.Variables {
		got[name] = v.Value
	}
	want := map[string]string{
		"CERT":     "-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----",
		"PASSWORD": "Tr0ub4dor #3 horse",
		"LINES":    "one\n  two",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("variables (-want +got):\n%s", diff)
	}
}
