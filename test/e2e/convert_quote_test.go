package e2e

import (
	"encoding/base64"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJourneyConvertQuotedPaths: the credential files of a syncd.yaml
// are in a directory whose name holds a space, a quote and a $. The
// kubectl command syncd convert prints for the Secret, pasted into a
// shell as it is, creates the Secret from those files.
func TestJourneyConvertQuotedPaths(t *testing.T) {
	w := newWorkspace(t)
	const ns, token = "convert-quote-e2e", "Wm5tRb8kYc2q-tok"
	ensureNamespace(t, ns)
	tokenFile := w.file("team's keys $HOME/token", token)
	w.writeConfig(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git: {url: "https://git.example.com/team/deploy.git", branch: main, interval: 5m, auth: {username: "ci bot", tokenFile: "` + tokenFile + `"}}
apps:
  - {name: web, source: repo, path: apps/web, namespace: ` + ns + `}
`)
	t.Cleanup(func() { _, _ = kubectl("-n", ns, "delete", "secret", "repo-git-auth", "--ignore-not-found") })

	r := w.must(exitOK, "convert", "--config", w.config, "-n", ns)
	line := commandIn(r.stderr, "kubectl -n "+ns+" create secret generic repo-git-auth ")
	if line == "" {
		t.Fatalf("convert gives no command creating Secret repo-git-auth\n%s", r)
	}
	sh := exec.Command("sh", "-c", line)
	sh.Dir = w.dir
	sh.Env = append(os.Environ(), "PATH="+env.BinDir+string(filepath.ListSeparator)+os.Getenv("PATH"), "KUBECONFIG="+env.Kubeconfig)
	if out, err := sh.CombinedOutput(); err != nil {
		t.Fatalf("the command convert printed, run by sh: %v\n%s\n%s", err, line, out)
	}
	got := mustKubectl(t, "-n", ns, "get", "secret", "repo-git-auth", "-o", "jsonpath={.data.token} {.data.username}")
	want := base64.StdEncoding.EncodeToString([]byte(token)) + " " + base64.StdEncoding.EncodeToString([]byte("ci bot"))
	if got != want {
		t.Errorf("Secret repo-git-auth created by the printed command: data %q, want the token file's content and the user name (%q)\n%s", got, want, line)
	}
	w.checkNoSecrets(token)
}

// commandIn is the command line, from prefix to the end of its line, in
// the output of syncd convert; empty when there is none.
func commandIn(out, prefix string) string {
	for _, l := range strings.Split(out, "\n") {
		if i := strings.Index(l, prefix); i >= 0 {
			return l[i:]
		}
	}
	return ""
}
