package e2e

import (
	"strings"
	"testing"

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
