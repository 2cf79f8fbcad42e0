package e2e

import (
	"fmt"
	"net"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyDeadAPIServer: with a kubeconfig naming an API server that
// does not answer, every command that talks to a cluster (plan, apply,
// drift of file apps and of App objects, get, tree, history, events and
// the App edits) says so once (the error and a hint), exit 1, with no
// client-go log line and no error repeated per object.
func TestJourneyDeadAPIServer(t *testing.T) {
	w := newWorkspace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "two")
	if _, err := repo.Commit("two", map[string][]byte{"app/cms.yaml": []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: two
    git: {url: %s, branch: main, interval: 1m}
apps:
  - {name: two, source: two, path: app, namespace: default}
`, repo.URL))
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := l.Addr().String()
	l.Close()
	kubeconfig := w.file("dead.kubeconfig", fmt.Sprintf(`apiVersion: v1
kind: Config
clusters: [{name: dead, cluster: {server: "https://%s", insecure-skip-tls-verify: true}}]
users: [{name: u, user: {token: not-a-secret}}]
contexts: [{name: dead, context: {cluster: dead, user: u}}]
current-context: dead
`, dead))
	for _, cmd := range [][]string{
		{"plan", "--config", w.config, "--app", "two", "--cache-dir", w.cache},
		{"apply", "--config", w.config, "--app", "two", "--cache-dir", w.cache},
		{"drift", "--config", w.config, "--app", "two", "--cache-dir", w.cache},
		{"apply", "--path", repo.Work + "/app", "--manager", "team-x"},
		{"drift", "--app", "web", "-n", "default"},
		{"plan", "--app", "web", "-n", "default"},
		{"get", "apps", "-A"},
		{"tree", "app", "web", "-n", "default"},
		{"history", "app", "web", "-n", "default"},
		{"events", "app", "web", "-n", "default"},
		{"reconcile", "app", "web", "-n", "default"},
		{"suspend", "app", "web", "-n", "default"},
		{"resume", "app", "web", "-n", "default"},
	} {
		r := w.must(exitError, append(cmd, "--kubeconfig", kubeconfig)...)
		lines := strings.Split(strings.TrimSpace(r.stderr), "\n")
		if len(lines) != 2 || !strings.HasPrefix(lines[0], "error: the API server at https://"+dead+" did not answer") ||
			!strings.HasPrefix(lines[1], "hint: syncd could not connect to the API server at "+dead) {
			t.Errorf("want the error and the hint, two lines\n%s", r)
		}
	}
}
