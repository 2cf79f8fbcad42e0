package renderproc

import (
	"os"
	"path/filepath"
	"testing"

	"syncd.dev/syncd/internal/planner"
)

// writeTree writes files (slash-separated names) below a new directory
// and returns it.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

// chartTree is a Tree of a chart with the given templates/ files and
// values.yaml.
func chartTree(t testing.TB, values string, templates map[string]string) planner.Tree {
	t.Helper()
	files := map[string]string{
		"Chart.yaml":  "apiVersion: v2\nname: bomb\nversion: 0.1.0\n",
		"values.yaml": values,
	}
	for name, content := range templates {
		files["templates/"+name] = content
	}
	dir := writeTree(t, files)
	return planner.Tree{Root: dir, Dir: dir, Helm: planner.HelmOptions{ReleaseName: "r", Namespace: "default"}}
}

// newRenderer is a Renderer with l, failing the test on error.
func newRenderer(t testing.TB, l Limits) *Renderer {
	t.Helper()
	r, err := New(l)
	if err != nil {
		t.Fatal(err)
	}
	return r
}
