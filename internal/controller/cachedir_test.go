package controller

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/types"
)

// TestAppCacheDirs: an App's cache directory names neither its namespace
// nor its name, is the same for a new process over the same cache (a
// restart reuses the clone), differs for another UID (a recreated App)
// and for another cache's key; the sweep keeps the live directories and
// the key and removes the rest, the old <namespace>/<name> layout too.
func TestAppCacheDirs(t *testing.T) {
	root := t.TempDir()
	first := &appCaches{root: root}
	dir, err := first.dir("team-b", "web", "uid-1")
	if err != nil {
		t.Fatal(err)
	}
	if rel := strings.TrimPrefix(dir, root); strings.Contains(rel, "team-b") || strings.Contains(rel, "web") {
		t.Errorf("cache directory %s names the App", dir)
	}
	if info, err := os.Stat(filepath.Join(root, keyFile)); err != nil || info.Mode().Perm() != 0o600 {
		t.Errorf("key file: %v %v, want mode 0600", info, err)
	}
	tests := map[string]struct {
		caches         *appCaches
		ns, name       string
		uid            types.UID
		wantSameAsWeb1 bool
	}{
		"restart":         {caches: &appCaches{root: root}, ns: "team-b", name: "web", uid: "uid-1", wantSameAsWeb1: true},
		"recreated":       {caches: &appCaches{root: root}, ns: "team-b", name: "web", uid: "uid-2"},
		"colliding names": {caches: &appCaches{root: root}, ns: "team", name: "b-web", uid: "uid-1"},
		"another cache":   {caches: &appCaches{root: t.TempDir()}, ns: "team-b", name: "web", uid: "uid-1"},
	}
	for name, tc := range tests {
		got, err := tc.caches.dir(tc.ns, tc.name, tc.uid)
		if err != nil {
			t.Fatal(err)
		}
		if same := filepath.Base(got) == filepath.Base(dir); same != tc.wantSameAsWeb1 {
			t.Errorf("%s: %s vs %s: same = %t, want %t", name, got, dir, same, tc.wantSameAsWeb1)
		}
	}

	gone, _ := first.dir("team-c", "api", "uid-3")
	old := filepath.Join(root, "team-b", "web", "repo")
	for _, d := range []string{dir, gone, old} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	if err := first.sweep(map[string]bool{dir: true}); err != nil {
		t.Fatal(err)
	}
	for d, want := range map[string]bool{dir: true, filepath.Join(root, keyFile): true, gone: false, filepath.Join(root, "team-b"): false} {
		if _, err := os.Stat(d); (err == nil) != want {
			t.Errorf("after the sweep, %s exists = %t, want %t", d, err == nil, want)
		}
	}
}
