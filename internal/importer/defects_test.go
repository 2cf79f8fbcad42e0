package importer

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// importYAML imports the documents of y as read from standard input.
func importYAML(t *testing.T, tool Tool, opts Options, y string) *Result {
	t.Helper()
	docs, warnings, err := Read([]string{Stdin}, strings.NewReader(y))
	if err != nil {
		t.Fatal(err)
	}
	if len(warnings) > 0 {
		t.Fatalf("reading the test's YAML: %v", warnings)
	}
	return Import(tool, docs, opts)
}

// warningsAbout are the warnings of ws about field of object, as
// "field: message".
func warningsAbout(ws []Warning, object, field string) []string {
	var out []string
	for _, w := range ws {
		if w.Object == object && w.Field == field {
			out = append(out, w.Field+": "+w.Message)
		}
	}
	return out
}

// hasWarning reports whether one of ws is about field of object and
// contains every one of parts.
func hasWarning(ws []Warning, object, field string, parts ...string) bool {
	for _, m := range warningsAbout(ws, object, field) {
		if containsAll(m, parts...) {
			return true
		}
	}
	return false
}

// containsAll reports whether s contains every one of parts.
func containsAll(s string, parts ...string) bool {
	for _, p := range parts {
		if !strings.Contains(s, p) {
			return false
		}
	}
	return true
}

func TestProviderWarnedOnlyForCloudIdentity(t *testing.T) {
	for name, tc := range map[string]struct {
		kind, provider string
		want           bool
	}{
		"GitRepository without provider":  {kind: "GitRepository"},
		"GitRepository generic":           {kind: "GitRepository", provider: "generic"},
		"GitRepository github":            {kind: "GitRepository", provider: "github", want: true},
		"GitRepository azure":             {kind: "GitRepository", provider: "azure", want: true},
		"OCIRepository generic":           {kind: "OCIRepository", provider: "generic"},
		"OCIRepository aws":               {kind: "OCIRepository", provider: "aws", want: true},
		"HelmRepository generic":          {kind: "HelmRepository", provider: "generic"},
		"HelmRepository gcp":              {kind: "HelmRepository", provider: "gcp", want: true},
		"HelmRepository without provider": {kind: "HelmRepository"},
		"OCIRepository without provider":  {kind: "OCIRepository"},
	} {
		t.Run(name, func(t *testing.T) {
			url := map[string]string{"GitRepository": "https://git.example.com/r.git", "OCIRepository": "oci://ghcr.io/org/m", "HelmRepository": "https://charts.example.com"}[tc.kind]
			y := "apiVersion: source.toolkit.fluxcd.io/v1\nkind: " + tc.kind + "\nmetadata: {name: s, namespace: flux-system}\nspec:\n  interval: 1m\n  url: " + url + "\n"
			if tc.provider != "" {
				y += "  provider: " + tc.provider + "\n"
			}
			res := importYAML(t, Flux, Options{}, y)
			got := warningsAbout(res.Warnings, tc.kind+" flux-system/s", "spec.provider")
			if (len(got) > 0) != tc.want {
				t.Errorf("provider %q: warnings %q, want a warning: %v", tc.provider, got, tc.want)
			}
			if tc.want && !hasWarning(res.Warnings, tc.kind+" flux-system/s", "spec.provider", "cloud workload identity is not supported", `"`+tc.provider+`"`) {
				t.Errorf("provider %q: warning %q does not say it is unsupported", tc.provider, got)
			}
		})
	}
}

var _ = cmp.Diff
