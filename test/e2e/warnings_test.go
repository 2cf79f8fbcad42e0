package e2e

import (
	"fmt"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// widgetCRD is a CRD whose schema uses formats the API server does not
// know ("url", "string"), as generated CRDs of operators do: creating or
// changing it makes the API server answer with a warning for each.
const widgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.warn.e2e.syncd.dev}
spec:
  group: warn.e2e.syncd.dev
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
    - name: v1
      served: true
      storage: true
      schema:
        openAPIV3Schema:
          type: object
          properties:
            spec:
              type: object
              properties:
                homepage: {type: string, format: url}
                owner: {type: string, format: string}
`

// TestJourneyAPIServerWarnings: the API server's warnings reach the user
// as syncd's own "warning:" lines, each once, never as client-go's raw
// log lines on stderr.
func TestJourneyAPIServerWarnings(t *testing.T) {
	w := newWorkspace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "widgets")
	if _, err := repo.Commit("widgets", map[string][]byte{"crds/widget.yaml": []byte(widgetCRD)}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: widgets
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: widgets
    source: widgets
    path: crds
    namespace: default
`, repo.URL))
	r := w.must(0, "apply", "--config", w.config, "--cache-dir", w.cache)
	want := []string{`warning: API server: unrecognized format "url"`, `warning: API server: unrecognized format "string"`}
	for _, line := range want {
		if n := strings.Count(r.stderr, line+"\n"); n != 1 {
			t.Errorf("stderr has %q %d times, want once\n%s", line, n, r)
		}
	}
	if strings.Contains(r.stderr, "warnings.go") || strings.Contains(r.stderr, "Warning:") {
		t.Errorf("stderr has client-go's raw warning lines:\n%s", r)
	}
}
