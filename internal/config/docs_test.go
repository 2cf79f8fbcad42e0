package config

import (
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestDocsExample keeps the complete example of docs/config.md equal to
// testdata/valid-full.yaml, which TestLoadValidFull proves valid.
func TestDocsExample(t *testing.T) {
	doc, err := os.ReadFile("../../docs/config.md")
	if err != nil {
		t.Fatal(err)
	}
	want, err := os.ReadFile("testdata/valid-full.yaml")
	if err != nil {
		t.Fatal(err)
	}
	_, rest, ok := strings.Cut(string(doc), "## Complete example\n")
	if !ok {
		t.Fatal(`docs/config.md has no "## Complete example" section`)
	}
	_, rest, ok = strings.Cut(rest, "```yaml\n")
	if !ok {
		t.Fatal("docs/config.md: the complete example has no ```yaml block")
	}
	got, _, ok := strings.Cut(rest, "```\n")
	if !ok {
		t.Fatal("docs/config.md: the complete example's yaml block is not closed")
	}
	if diff := cmp.Diff(string(want), got); diff != "" {
		t.Errorf("docs/config.md's complete example differs from testdata/valid-full.yaml; copy the file into the doc (-file +doc):\n%s", diff)
	}
}
