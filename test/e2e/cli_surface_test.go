package e2e

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestJourneyCompletion: shell completion (cobra's __complete, what the
// bash, zsh and fish scripts of `syncd completion` call) offers the App
// objects of the -n namespace for NAME, stops after the one NAME a
// command takes, skips names already given to get, offers namespaces
// for -n, and the apps of --config for --app.
func TestJourneyCompletion(t *testing.T) {
	w := newWorkspace(t)
	const ns = "complete-e2e"
	ensureNamespace(t, ns)
	var apps strings.Builder
	for _, name := range []string{"web", "worker", "api"} {
		apps.WriteString("apiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: " + name + "}\nspec:\n  sourceRef: {kind: GitSource, name: repo}\n  path: apps/" + name + "\n---\n")
	}
	mustKubectl(t, "-n", ns, "apply", "-f", w.file("apps.yaml", apps.String()))
	t.Cleanup(func() { _, _ = kubectl("-n", ns, "delete", "apps.syncd.dev", "--all", "--timeout=30s") })
	w.writeConfig(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git: {url: "https://git.example.com/org/repo.git", branch: main, interval: 1m}
apps:
  - {name: frontend, source: repo, path: a}
  - {name: backend, source: repo, path: b}
`)
	complete := func(args ...string) []string {
		t.Helper()
		r := w.must(0, append([]string{"__complete"}, args...)...)
		var names []string
		for _, l := range strings.Split(strings.TrimSpace(r.stdout), "\n") {
			if !strings.HasPrefix(l, ":") {
				names = append(names, l)
			}
		}
		return names
	}
	tests := map[string]struct {
		args []string
		want []string
	}{
		"reconcile app w":         {[]string{"reconcile", "app", "-n", ns, "w"}, []string{"web", "worker"}},
		"tree app after its NAME": {[]string{"tree", "app", "-n", ns, "web", ""}, nil},
		"get apps, one given":     {[]string{"get", "apps", "-n", ns, "web", ""}, []string{"api", "worker"}},
		"-n":                      {[]string{"get", "apps", "-n", "complete-"}, []string{ns}},
		"history app --config":    {[]string{"history", "app", "--config", w.config, ""}, []string{"frontend", "backend"}},
		"drift --app":             {[]string{"drift", "--config", w.config, "--app", "b"}, []string{"backend"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, complete(tc.args...)); diff != "" {
				t.Errorf("__complete %s (-want +got):\n%s", strings.Join(tc.args, " "), diff)
			}
		})
	}
}

// TestJourneyGetNameAndWatch: `syncd get apps -o name` prints kubectl's
// kind.group/name lines, and `-w` prints the table, then a row for each
// change of an App as it happens.
func TestJourneyGetNameAndWatch(t *testing.T) {
	w := newWorkspace(t)
	const ns = "watch-e2e"
	ensureNamespace(t, ns)
	mustKubectl(t, "-n", ns, "apply", "-f", w.file("apps.yaml", "apiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec:\n  sourceRef: {kind: GitSource, name: repo}\n  path: apps/web\n"))
	t.Cleanup(func() { _, _ = kubectl("-n", ns, "delete", "apps.syncd.dev", "--all", "--timeout=30s") })

	r := w.must(0, "get", "apps", "-n", ns, "-o", "name")
	if r.stdout != "app.syncd.dev/web\n" {
		t.Errorf("-o name: %q, want app.syncd.dev/web", r.stdout)
	}

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "get", "apps", "-n", ns, "-w")
	cmd.Env = w.environ()
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() { _ = cmd.Process.Kill(); _ = cmd.Wait() }()
	lines := make(chan string)
	go func() {
		sc := bufio.NewScanner(stdout)
		for sc.Scan() {
			lines <- sc.Text()
		}
		close(lines)
	}()
	next := func(what string) string {
		t.Helper()
		select {
		case l, ok := <-lines:
			if !ok {
				t.Fatalf("get -w ended before %s", what)
			}
			return l
		case <-ctx.Done():
			t.Fatalf("no %s from get -w", what)
		}
		return ""
	}
	if h := strings.Fields(next("the header")); len(h) == 0 || h[0] != "NAME" {
		t.Fatalf("first line %q, want the header", h)
	}
	if row := next("the App's row"); !strings.HasPrefix(row, "web ") {
		t.Fatalf("second line %q, want web's row", row)
	}
	mustKubectl(t, "-n", ns, "patch", "apps.syncd.dev", "web", "--type=merge", "-p", `{"spec":{"suspend":true}}`)
	for {
		row := next("a row for the change")
		if strings.HasPrefix(row, "web ") && strings.Contains(row, "suspended") {
			break
		}
	}
}

// TestJourneyCLIArguments: wrong arguments exit 1 with one line saying
// what is accepted; syncd diff is plan; version -o json is JSON; the
// binary's --help is the golden one cmd/syncd's test keeps for every
// command.
func TestJourneyCLIArguments(t *testing.T) {
	w := newWorkspace(t)
	refusals := map[string]struct {
		args []string
		want string
	}{
		"get kustomizations":        {[]string{"get", "kustomizations"}, `error: syncd get: unknown resource "kustomizations": use apps (app) or gitsources (gitsource) or helmsources (helmsource) or ocisources (ocisource)`},
		"suspend kustomization foo": {[]string{"suspend", "kustomization", "foo"}, `error: syncd suspend: unknown resource "kustomization": use app`},
		"history, no resource":      {[]string{"history"}, `error: syncd history needs a resource: app (apps)`},
		"drift -A --app":            {[]string{"drift", "-A", "--app", "web"}, `error: --app names one App of -n; drop -A`},
		"get -o bad":                {[]string{"get", "apps", "-o", "table"}, `error: -o "table"`},
	}
	for name, tc := range refusals {
		t.Run(name, func(t *testing.T) {
			r := w.must(exitError, tc.args...)
			if !strings.HasPrefix(r.stderr, tc.want) || strings.Count(r.stderr, "\n") != 1 || r.stdout != "" {
				t.Errorf("want one line %q...\n%s", tc.want, r)
			}
		})
	}

	r := w.must(exitOK, "version", "-o", "json")
	var v map[string]string
	if err := json.Unmarshal([]byte(r.stdout), &v); err != nil || v["version"] == "" {
		t.Errorf("version -o json: %v\n%s", err, r)
	}

	for _, tc := range []struct{ args []string }{{[]string{"--help"}}, {[]string{"diff", "--help"}}, {[]string{"get", "apps", "--help"}}} {
		r := w.must(exitOK, tc.args...)
		golden := "syncd"
		for _, a := range tc.args[:len(tc.args)-1] {
			golden += "_" + strings.ReplaceAll(a, "diff", "plan")
		}
		want, err := os.ReadFile(filepath.Join("..", "..", "cmd", "syncd", "testdata", "help", golden+".golden"))
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff(string(want), r.stdout); diff != "" {
			t.Errorf("syncd %s (-%s.golden +got):\n%s", strings.Join(tc.args, " "), golden, diff)
		}
	}
}
