package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyRelativeCacheDir: --cache-dir given relative to the shell's
// directory, as a user types it. The checkout goes there and the render
// (in syncd-render, which runs in "/") reads it there: syncd plan
// previews the app instead of failing to find its own checkout.
func TestJourneyRelativeCacheDir(t *testing.T) {
	w := newWorkspace(t)
	repo := gitserver.StartTest(t).NewTestRepo(t, "relcache")
	if _, err := repo.Commit("web", map[string][]byte{"apps/web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: git}\n")}); err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, "rel-cache-e2e")
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: web
    git: {url: %q, branch: main, interval: 5m}
apps:
  - {name: rel-cache, source: web, path: apps/web, namespace: rel-cache-e2e}
`, repo.URL))
	r := w.syncdIn(w.dir, "plan", "--config", "syncd.yaml", "--app", "rel-cache", "--cache-dir", "./relcache")
	if r.code != exitChanges || !strings.Contains(r.stdout, "ConfigMap rel-cache-e2e/web") {
		t.Fatalf("plan with --cache-dir ./relcache: exit %d (want %d), want the ConfigMap previewed\n%s", r.code, exitChanges, r)
	}
	if clones := gitDirs(t, filepath.Join(w.dir, "relcache")); len(clones) == 0 {
		t.Errorf("no clone under the relative cache directory %s", filepath.Join(w.dir, "relcache"))
	}
}
