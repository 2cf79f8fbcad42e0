package e2e

import (
	"strings"
	"testing"
)

// TestJourneyConvert: syncd convert of a syncd.yaml with a Git source, an
// app and an alert prints a GitSource, an App, an AlertProvider and an
// Alert that the API server admits as they are (a server-side dry run of
// kubectl apply, with the CRDs' validation), and the kubectl commands
// for the Secrets they name, without reading the credential files.
func TestJourneyConvert(t *testing.T) {
	w := newWorkspace(t)
	const ns = "convert-e2e"
	ensureNamespace(t, ns)
	token := w.file("token", "Qz8rTk2wVx5n-tok\n")
	hook := w.file("hook-url", "https://hooks.example.com/Hm4pLq7sWc9d-hook\n")
	w.writeConfig(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git: {url: "https://git.example.com/team/deploy.git", branch: main, interval: 5m, auth: {username: ci, tokenFile: ` + token + `}}
apps:
  - {name: web, source: repo, path: apps/web, namespace: ` + ns + `}
alerts:
  - {name: oncall, type: slack, urlFile: ` + hook + `, events: [drift, error]}
`)
	r := w.must(exitOK, "convert", "--config", w.config, "-n", ns)
	for _, want := range []string{
		"kubectl -n " + ns + " create secret generic repo-git-auth --from-file=token=" + token,
		"kubectl -n " + ns + " create secret generic oncall-alert --from-file=address=" + hook,
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("convert does not give the command %q:\n%s", want, r)
		}
	}
	out := mustKubectl(t, "apply", "--dry-run=server", "-f", w.file("converted.yaml", r.stdout))
	for _, want := range []string{"gitsource.syncd.dev/repo", "app.syncd.dev/web", "alertprovider.syncd.dev/oncall", "alert.syncd.dev/oncall"} {
		if !strings.Contains(out, want) {
			t.Errorf("kubectl apply --dry-run=server of convert's output does not admit %s:\n%s\n%s", want, out, r.stdout)
		}
	}
	w.checkNoSecrets("Qz8rTk2wVx5n-tok", "Hm4pLq7sWc9d-hook")
}
