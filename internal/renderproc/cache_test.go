package renderproc

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/decrypt"
	"syncd.dev/syncd/internal/decrypt/sopstest"
	"syncd.dev/syncd/internal/planner"
)

// TestKeptAnswersAreReadBack: with KeepAnswers, a tree whose content is
// known is rendered once: the next render of the same content (here from
// a directory since emptied, which only the kept answer can explain)
// returns the same manifests. Other content, another directory of it,
// other limits, a chart, decryption keys or a failed render are rendered
// (and nothing is kept for the last three); an answer damaged on disk
// is rendered again and replaced.
func TestKeptAnswersAreReadBack(t *testing.T) {
	files := map[string]string{
		"app/a.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n  namespace: ns\ndata:\n  k: v\n",
		"other/b.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\n  namespace: ns\n",
	}
	root := writeTree(t, files)
	tree := planner.Tree{Root: root, Dir: filepath.Join(root, "app"), Content: "tree-1"}
	want, err := planner.Render(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	cacheDir := t.TempDir()
	r := newRenderer(t, Limits{Time: 5 * time.Second})
	r.KeepAnswers(cacheDir)
	render := func(what string, tr planner.Tree) ([]planner.Manifest, error) {
		t.Helper()
		return r.Render(context.Background(), tr)
	}
	if got, err := render("first", tree); err != nil || !cmp.Equal(want, got) {
		t.Fatalf("first render: %v\n%s", err, cmp.Diff(want, got))
	}
	kept := keptAnswers(t, cacheDir)
	if len(kept) != 1 {
		t.Fatalf("%d answers kept after one render, want 1", len(kept))
	}
	if err := os.Remove(filepath.Join(root, "app", "a.yaml")); err != nil {
		t.Fatal(err)
	}
	got, err := render("same content", tree)
	if err != nil || !cmp.Equal(want, got) {
		t.Fatalf("same content again: %v (-want +got):\n%s", err, cmp.Diff(want, got))
	}

	// Renders the kept answer must not stand for: each renders the now
	// empty directory (no manifests) or fails.
	chart := chartTree(t, "", map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n"})
	chart.Content = "tree-1"
	keys, err := decrypt.ParseKeys(sopstest.NewIdentity(t).KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	others := map[string]planner.Tree{
		"other content":        {Root: root, Dir: tree.Dir, Content: "tree-2"},
		"content unknown":      {Root: root, Dir: tree.Dir},
		"another directory":    {Root: root, Dir: filepath.Join(root, "other"), Content: "tree-1"},
		"with decryption keys": {Root: root, Dir: tree.Dir, Content: "tree-1", Decryption: keys},
	}
	for what, tr := range others {
		got, err := render(what, tr)
		if err == nil && cmp.Equal(want, got) {
			t.Errorf("%s: the kept answer of tree-1's app/ was returned", what)
		}
	}
	if got, err := render("a chart", chart); err != nil || len(got) != 1 || got[0].Object.GetName() != "c" {
		t.Errorf("a chart of the same content: %v, %v; want its own ConfigMap c", got, err)
	}
	tighter := newRenderer(t, Limits{Time: 4 * time.Second})
	tighter.KeepAnswers(cacheDir)
	if got, err := tighter.Render(context.Background(), tree); err == nil && cmp.Equal(want, got) {
		t.Errorf("other limits: the kept answer was returned")
	}
	// Kept so far: tree-1's app/ (twice: under each limit), tree-2's
	// app/ and tree-1's other/; never the chart, the keys or the tree of
	// unknown content.
	if n := len(keptAnswers(t, cacheDir)); n != 4 {
		t.Errorf("%d answers kept, want 4", n)
	}

	// A damaged answer is rendered again (the empty directory) and
	// replaced.
	if err := os.WriteFile(filepath.Join(cacheDir, kept[0]), []byte(`{"manifests":[{"trunc`), 0o600); err != nil {
		t.Fatal(err)
	}
	if got, err := render("damaged", tree); err != nil || len(got) != 0 {
		t.Errorf("damaged answer: got %d manifests, %v; want the empty directory rendered", len(got), err)
	}
	if got, err := render("replaced", tree); err != nil || len(got) != 0 {
		t.Errorf("after the damaged answer: got %d manifests, %v; want the new answer", len(got), err)
	}
}

// TestFailedRenderIsNotKept: a render that fails keeps nothing and
// leaves no copy behind.
func TestFailedRenderIsNotKept(t *testing.T) {
	root := writeTree(t, map[string]string{"bad.yaml": "kind: [\n"})
	cacheDir := t.TempDir()
	r := newRenderer(t, Limits{Time: 5 * time.Second})
	r.KeepAnswers(cacheDir)
	tree := planner.Tree{Root: root, Dir: root, Content: "bad"}
	for range 2 {
		if _, err := r.Render(context.Background(), tree); err == nil {
			t.Fatal("the render of bad.yaml did not fail")
		}
	}
	entries, err := os.ReadDir(cacheDir)
	if err != nil {
		t.Fatal(err)
	}
	if len(entries) != 0 {
		t.Errorf("a failed render left %d files in the cache", len(entries))
	}
}

// TestKeptAnswersAreBounded: the cache keeps the answers used last, as
// many and as large in all as its bounds allow.
func TestKeptAnswersAreBounded(t *testing.T) {
	root := writeTree(t, map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: ns}\n"})
	for name, bound := range map[string]func(c *answerCache, size int64){
		"entries": func(c *answerCache, _ int64) { c.entries = 4 },
		"bytes":   func(c *answerCache, size int64) { c.bytes = 4*size + size/2 },
	} {
		t.Run(name, func(t *testing.T) {
			cacheDir := t.TempDir()
			r := newRenderer(t, Limits{Time: 5 * time.Second})
			r.KeepAnswers(cacheDir)
			render := func(content string) {
				t.Helper()
				if _, err := r.Render(context.Background(), planner.Tree{Root: root, Dir: root, Content: content}); err != nil {
					t.Fatal(err)
				}
			}
			render("first")
			st, err := os.Stat(filepath.Join(cacheDir, keptAnswers(t, cacheDir)[0]))
			if err != nil {
				t.Fatal(err)
			}
			bound(r.answers(), st.Size())
			for i := range 6 {
				render(fmt.Sprint(i))
			}
			if n := len(keptAnswers(t, cacheDir)); n != 4 {
				t.Errorf("%d answers kept after 7 renders, want the 4 of the bound", n)
			}
		})
	}
}

// keptAnswers lists the answers in a cache directory.
func keptAnswers(t *testing.T, dir string) []string {
	t.Helper()
	entries, err := os.ReadDir(dir)
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		if e.Name()[0] != '.' {
			out = append(out, e.Name())
		}
	}
	return out
}

// TestCopyThatCannotBeWrittenFailsNothing: the copy of an answer that
// cannot be written (a full disk, here /dev/full) swallows the error, so
// the render being read goes on, and remembers it, so nothing is kept.
func TestCopyThatCannotBeWrittenFailsNothing(t *testing.T) {
	full, err := os.OpenFile("/dev/full", os.O_WRONLY, 0)
	if err != nil {
		t.Skipf("no /dev/full: %v", err)
	}
	defer full.Close()
	w := &copyWriter{f: full}
	if n, err := w.Write([]byte(`{"manifests":[]}`)); n != 16 || err != nil {
		t.Errorf("Write = %d, %v; want 16, nil", n, err)
	}
	if w.err == nil {
		t.Errorf("the failed write was not remembered")
	}
}
