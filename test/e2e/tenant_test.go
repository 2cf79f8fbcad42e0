package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
)

// TestJourneyTenantCannotReadAnotherClone: team B's App runs under
// `syncd run`; team A, who knows the cache layout, tries to read team
// B's clone with a GitSource of a file URL or a path: kubectl apply is
// refused naming spec.url, and the clone's directory names neither team
// B's namespace nor its App. The operator's own config file may not
// point a file:// source into the cache either: `syncd plan` refuses it
// naming the field.
func TestJourneyTenantCannotReadAnotherClone(t *testing.T) {
	b := &appJourney{t: t, w: newWorkspace(t), cl: newCluster(t), ns: "tenant-b", name: "web",
		token: "gts-e2e-Tn7vB2qL9xW4kP3s", step: stepper(t)}
	sha := b.serveRepo()
	d := b.startDaemon()
	b.declare()
	b.waitReady(sha)
	b.step("team B's App Ready")

	clone := onlyClone(t, filepath.Join(b.w.cache, ".app-objects"))
	if rel, _ := filepath.Rel(b.w.cache, clone); strings.Contains(rel, b.ns) || strings.Contains(rel, "/"+b.name+"/") {
		t.Errorf("team B's clone is at %s: a path another team can name", rel)
	}
	ensureNamespace(t, "tenant-a")
	for _, url := range []string{"file://" + clone, clone} {
		manifest := b.w.file("steal.yaml", fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata: {name: steal}
spec: {url: %q, branch: main, interval: 5s}
`, url))
		out, err := kubectl("-n", "tenant-a", "apply", "-f", manifest)
		if err == nil {
			_, _ = kubectl("-n", "tenant-a", "delete", "gitsource/steal", "--ignore-not-found")
			t.Errorf("kubectl apply of a GitSource with url %s was admitted:\n%s", url, out)
			continue
		}
		if s := string(out); !strings.Contains(s, "spec.url") || !strings.Contains(s, "reads syncd's own disk") {
			t.Errorf("kubectl apply of a GitSource with url %s: want a refusal of spec.url saying it reads syncd's own disk:\n%s", url, out)
		}
	}
	b.step("team A's file URL refused")

	b.w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: steal
    git: {url: %q, branch: main, interval: 5m}
apps:
  - name: steal
    source: steal
    path: apps/web
    namespace: tenant-a
`, "file://"+clone))
	r := b.w.must(exitError, "plan", "--config", b.w.config, "--app", "steal", "--cache-dir", b.w.cache)
	if !strings.Contains(r.stderr, "sources[0].git.url: the file URL points inside syncd's cache directory") {
		t.Errorf("plan of a config whose file:// source is inside the cache: want the refusal naming sources[0].git.url\n%s", r)
	}
	b.step("a config file's file:// source inside the cache refused")

	b.deleteApp()
	b.step("team B's App deleted, pruned")
	d.stop()
	b.w.checkNoSecrets(b.token)
}

// onlyClone is the one Git clone below root (a directory holding HEAD
// and objects).
func onlyClone(t *testing.T, root string) string {
	t.Helper()
	found := gitDirs(t, root)
	if len(found) != 1 {
		t.Fatalf("clones below %s: %q; want one", root, found)
	}
	return found[0]
}
