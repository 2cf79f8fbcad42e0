package importer

import (
	"strings"
	"testing"
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
