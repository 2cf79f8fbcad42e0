package e2e

import (
	"fmt"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyRenderBareRepository: a config's source is a bare
// repository on disk (file://, a server's repository or git clone
// --bare), which has no files to render. syncd render without --path
// exits 1 saying it is a bare repository and how to render it (a
// checkout and --path); a --path that does not exist (into the bare
// repository, or a typo in the checkout) exits 1 naming that path.
// Doing what the error says renders the app, and syncd plan, which
// fetches the repository, previews it.
func TestJourneyRenderBareRepository(t *testing.T) {
	w := newWorkspace(t)
	const ns, app = "render-bare-e2e", "render-bare"
	repo := gitserver.StartTest(t).NewTestRepo(t, "renderbare")
	if _, err := repo.Commit("web", map[string][]byte{"deploy/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: git}\n")}); err != nil {
		t.Fatal(err)
	}
	ensureNamespace(t, ns)
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - {name: bare, git: {url: %q, branch: main, interval: 5m}}
apps:
  - {name: %s, source: bare, path: deploy, namespace: %s}
`, "file://"+repo.Bare, app, ns))

	r := w.must(exitError, "render", "--config", w.config, "--app", app)
	want := "app " + app + ": source bare is the bare repository " + repo.Bare + ", which has no working tree to render: pass --path DIR with a checkout of it (git clone " + repo.Bare + " DIR, then --path DIR/deploy), or preview it with syncd plan, which fetches it"
	if !strings.Contains(r.stderr, want) || r.stdout != "" {
		t.Errorf("render of a bare repository without --path: want %q on stderr and nothing on stdout\n%s", want, r)
	}

	checkout := filepath.Join(w.dir, "checkout")
	gitClone(t, repo.Bare, checkout)
	for name, path := range map[string]string{
		"into the bare repository": filepath.Join(repo.Bare, "deploy"),
		"a typo in the checkout":   filepath.Join(checkout, "deplyo"),
	} {
		r := w.must(exitError, "render", "--config", w.config, "--app", app, "--path", path)
		if !strings.Contains(r.stderr, path) || r.stdout != "" {
			t.Errorf("render --path %s (%s): want the path named on stderr and nothing on stdout\n%s", path, name, r)
		}
	}

	r = w.must(exitOK, "render", "--config", w.config, "--app", app, "--path", filepath.Join(checkout, "deploy"))
	if !strings.Contains(r.stdout, "ConfigMap "+ns+"/web") {
		t.Errorf("render --path of a checkout: want the ConfigMap\n%s", r)
	}
	r = w.must(exitChanges, "plan", "--config", w.config, "--app", app, "--cache-dir", w.cache)
	if !strings.Contains(r.stdout, "ConfigMap "+ns+"/web") {
		t.Errorf("plan of the bare repository: want the ConfigMap previewed\n%s", r)
	}
}

// gitClone clones repo into dir with the git command, as a user does.
func gitClone(t *testing.T, repo, dir string) {
	t.Helper()
	if out, err := exec.Command("git", "clone", "-q", repo, dir).CombinedOutput(); err != nil {
		t.Fatalf("git clone %s: %v\n%s", repo, err, out)
	}
}
