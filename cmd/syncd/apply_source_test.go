package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// sourceConfig serves a Git repository on loopback and writes a syncd.yaml
// whose app web renders app/ of its main branch into ns.
func sourceConfig(t *testing.T, ns string) (*gitserver.Repo, string) {
	t.Helper()
	return sourceConfigEvery(t, ns, "1m")
}

// servedRepo is a new repository named name on a Git server of the
// test (closed at cleanup).
func servedRepo(t *testing.T, name string) *gitserver.Repo {
	t.Helper()
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := srv.NewRepo(name, t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return repo
}

// sourceConfigEvery is sourceConfig with the source polled every
// interval (syncd run's tests poll often).
func sourceConfigEvery(t *testing.T, ns, interval string) (*gitserver.Repo, string) {
	t.Helper()
	repo := servedRepo(t, "app")
	cfg := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: %s
    branch: main
    interval: %s
apps:
- name: web
  source: repo
  path: app
  namespace: %s
  pruneBudget: 100
`, repo.URL, interval, ns)}), "syncd.yaml")
	return repo, cfg
}

// TestApplyConfigFromSource: without --path, `syncd apply --config` fetches
// the app's Git source, plans the revision and applies it, and says which
// revision it applied.
func TestApplyConfigFromSource(t *testing.T) {
	ns := env.Namespace(t)
	repo, cfg := sourceConfig(t, ns)
	first, err := repo.Commit("first", map[string][]byte{
		"app/cm.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  color: blue\n"),
		"app/other.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: other\ndata:\n  k: v\n"),
		"README.md":      []byte("not under app/\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	r := syncd(t, "apply", "--config", cfg, "--cache-dir", cache)
	if r.code != exitOK {
		t.Fatalf("apply from source: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{"app web: revision " + first, "ConfigMap " + ns + "/seed created", "ConfigMap " + ns + "/other created"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := getConfigMap(t, ns).Data; !cmp.Equal(got, map[string]string{"color": "blue"}) {
		t.Errorf("seed data = %v, want color: blue", got)
	}

	// The next commit changes one object and drops the other: the same
	// command applies the new revision and prunes.
	second, err := repo.Commit("second", map[string][]byte{
		"app/cm.yaml":    []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  color: green\n"),
		"app/other.yaml": nil,
	})
	if err != nil {
		t.Fatal(err)
	}
	r = syncd(t, "apply", "--config", cfg, "--cache-dir", cache, "--app", "web")
	if r.code != exitOK {
		t.Fatalf("apply of the second commit: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// The prune names what it deleted, as the change lines name objects.
	for _, want := range []string{"app web: revision " + second, "ConfigMap " + ns + "/seed configured", "ConfigMap " + ns + "/other deleted\nprune: 1 deleted\n"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	if got := getConfigMap(t, ns).Data["color"]; got != "green" {
		t.Errorf("color = %q after the second commit, want green", got)
	}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "other", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("ConfigMap other left Git but is still there (get: %v)", err)
	}
}

// TestApplyConfigDryRun: `syncd apply --config --dry-run` runs the whole
// path with dryRun=All: a new object is not created, an existing one is
// not written, and the output says it was a dry run.
func TestApplyConfigDryRun(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir := func(color string) string {
		return writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": color})})
	}

	r := syncd(t, "apply", "--config", cfg, "--path", dir("blue"), "--dry-run")
	if r.code != exitOK || !strings.Contains(r.stdout, "ConfigMap "+ns+"/seed created (dry run)") {
		t.Fatalf("dry run of a new object: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "seed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Fatalf("dry run created the object (get: %v)", err)
	}

	if r := syncd(t, "apply", "--config", cfg, "--path", dir("blue")); r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	before := getConfigMap(t, ns)
	r = syncd(t, "apply", "--config", cfg, "--path", dir("green"), "--dry-run")
	if r.code != exitOK || !strings.Contains(r.stdout, "ConfigMap "+ns+"/seed configured (dry run)") {
		t.Fatalf("dry run of a change: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	after := getConfigMap(t, ns)
	if after.ResourceVersion != before.ResourceVersion || after.Data["color"] != "blue" {
		t.Errorf("dry run wrote the object: resourceVersion %s → %s, color %q", before.ResourceVersion, after.ResourceVersion, after.Data["color"])
	}
}

// TestApplyConfigKeepsRenders: `syncd apply --config` keeps the render of
// a Git revision's tree in the cache directory and reads it back when the
// next run finds the same tree (an empty commit here): the kept file is
// read in place, not rendered and written again, and the run applies the
// same objects. A damaged kept render is rendered again and replaced; a
// new tree is rendered and kept beside it.
func TestApplyConfigKeepsRenders(t *testing.T) {
	ns := env.Namespace(t)
	repo, cfg := sourceConfig(t, ns)
	if _, err := repo.Commit("first", map[string][]byte{
		"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  color: blue\n"),
	}); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	apply := func(what string) string {
		t.Helper()
		r := syncd(t, "apply", "--config", cfg, "--cache-dir", cache)
		if r.code != exitOK {
			t.Fatalf("%s: code %d\n%s%s", what, r.code, r.stdout, r.stderr)
		}
		return r.stdout
	}
	apply("first sync")
	kept := keptRender(t, cache)
	if kept.before.Mode().Perm() != 0o600 {
		t.Errorf("kept render's mode is %v, want 0600", kept.before.Mode().Perm())
	}

	if _, err := repo.Commit("empty", nil); err != nil {
		t.Fatal(err)
	}
	if out := apply("same tree"); !strings.Contains(out, "ConfigMap "+ns+"/seed unchanged") {
		t.Errorf("the run on the same tree did not find seed unchanged:\n%s", out)
	}
	kept.readInPlace(t)
	file := kept.file

	if err := os.WriteFile(file, []byte(`{"manifests":[{`), 0o600); err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("empty again", nil); err != nil {
		t.Fatal(err)
	}
	if out := apply("damaged"); !strings.Contains(out, "ConfigMap "+ns+"/seed unchanged") {
		t.Errorf("the run with a damaged kept render did not render again:\n%s", out)
	}
	if data, err := os.ReadFile(file); err != nil || !strings.Contains(string(data), `"seed"`) {
		t.Errorf("the damaged kept render was not replaced: %q, %v", data, err)
	}

	if _, err := repo.Commit("second", map[string][]byte{
		"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  color: green\n"),
	}); err != nil {
		t.Fatal(err)
	}
	if out := apply("new tree"); !strings.Contains(out, "ConfigMap "+ns+"/seed configured") {
		t.Errorf("the new tree was not applied:\n%s", out)
	}
	if n := len(keptRenders(t, cache)); n != 2 {
		t.Errorf("%d renders kept after a second tree, want 2", n)
	}
}

// keptFile is the one render kept in a cache directory, as it was before
// a run that should read it.
type keptFile struct {
	file   string
	before os.FileInfo
	// used is the time its last use was set to, an hour back.
	used time.Time
}

// keptRender returns the one render kept in cache, its last use set an
// hour back (so that reading it shows), and fails unless there is
// exactly one.
func keptRender(t *testing.T, cache string) keptFile {
	t.Helper()
	kept := keptRenders(t, cache)
	if len(kept) != 1 {
		t.Fatalf("%d renders kept, want 1: %v", len(kept), kept)
	}
	k := keptFile{file: filepath.Join(cache, "_renders", kept[0]), used: time.Now().Add(-time.Hour)}
	var err error
	if k.before, err = os.Stat(k.file); err != nil {
		t.Fatal(err)
	}
	if err := os.Chtimes(k.file, k.used, k.used); err != nil {
		t.Fatal(err)
	}
	return k
}

// readInPlace checks that the kept render was read where it was (the
// same file, its last use moved on), not rendered and written anew.
func (k keptFile) readInPlace(t *testing.T) {
	t.Helper()
	after, err := os.Stat(k.file)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(k.before, after) || !after.ModTime().After(k.used) {
		t.Errorf("the kept render was not read in place (same file %v, used %v)", os.SameFile(k.before, after), after.ModTime())
	}
}

// keptRenders lists the renders syncd apply --config kept in cache.
func keptRenders(t *testing.T, cache string) []string {
	t.Helper()
	entries, err := os.ReadDir(filepath.Join(cache, "_renders"))
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
