package e2e

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyWrongBranch: a config names a branch the repository does
// not have. The first poll fetches the branch by name, so the fetch is
// what finds it missing: syncd plan exits 1 naming the source, the branch
// and the field to change, and leaves no clone in the cache. With the
// branch fixed, the next plan previews the app. (The app has a name of
// its own: inventories of other journeys' apps named web share syncd's
// namespace.)
func TestJourneyWrongBranch(t *testing.T) {
	w := newWorkspace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "wrongbranch")
	if _, err := repo.Commit("web", map[string][]byte{"apps/web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: git}\n")}); err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, "wrong-branch-e2e")
	config := func(branch string) {
		w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: web
    git: {url: %q, branch: %s, interval: 5m}
apps:
  - name: wrong-branch
    source: web
    path: apps/web
    namespace: wrong-branch-e2e
`, repo.URL, branch))
	}

	config("mian")
	r := w.must(exitError, "plan", "--config", w.config, "--app", "wrong-branch", "--cache-dir", w.cache)
	for _, want := range []string{`source "web": fetch`, `RefNotFound: branch "mian" does not exist on the server`, "no revision of this source is in force yet", "change git.branch"} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("plan with a wrong branch: want %q on stderr\n%s", want, r)
		}
	}
	if clones := gitDirs(t, w.cache); len(clones) > 0 {
		t.Errorf("a source that fetched nothing left %q in the cache", clones)
	}

	config("main")
	r = w.must(exitChanges, "plan", "--config", w.config, "--app", "wrong-branch", "--cache-dir", w.cache)
	if !strings.Contains(r.stdout, "ConfigMap wrong-branch-e2e/web") {
		t.Errorf("plan with the branch fixed: want the ConfigMap previewed\n%s", r)
	}
}

// gitDirs lists the Git repositories (a HEAD file beside an objects
// directory) below root.
func gitDirs(t *testing.T, root string) []string {
	t.Helper()
	var found []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if _, err := os.Stat(filepath.Join(p, "HEAD")); err == nil {
			if _, err := os.Stat(filepath.Join(p, "objects")); err == nil {
				found = append(found, p)
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return found
}
