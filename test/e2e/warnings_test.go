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

// TestJourneyKustomizeWarnings: kustomizations with deprecated fields
// (bases, commonLabels, patchesStrategicMerge, as flagger's and
// argo-rollouts' installs have) print syncd's own warning lines naming
// each file, once, and no raw kustomize line ("# Warning: ...") reaches
// stderr, in render, plan and apply.
func TestJourneyKustomizeWarnings(t *testing.T) {
	w := newWorkspace(t)
	ensureNamespace(t, "old-style")
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "old-style")
	if _, err := repo.Commit("old style", map[string][]byte{
		"base/kustomization.yaml":    []byte("commonLabels: {app: web}\nresources: [cm.yaml]\n"),
		"base/cm.yaml":               []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: b}\n"),
		"overlay/kustomization.yaml": []byte("namespace: old-style\nbases: [../base]\npatchesStrategicMerge: [patch.yaml]\n"),
		"overlay/patch.yaml":         []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: c}\n"),
	}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: old
    git: {url: %s, branch: main, interval: 1m}
apps:
  - {name: old-style, source: old, path: overlay, namespace: old-style}
`, repo.URL))
	want := []string{
		"overlay/kustomization.yaml: 'bases' is deprecated.",
		"overlay/kustomization.yaml: 'patchesStrategicMerge' is deprecated.",
		"base/kustomization.yaml: 'commonLabels' is deprecated.",
	}
	app := []string{"--config", w.config, "--app", "old-style", "--cache-dir", w.cache}
	for _, cmd := range [][]string{
		append([]string{"render", "--path", repo.Work + "/overlay"}, app...),
		append([]string{"apply"}, app...),
		append([]string{"plan"}, app...),
	} {
		r := w.must(exitOK, cmd...)
		for _, line := range want {
			if n := strings.Count(r.stdout+r.stderr, line); n != 1 {
				t.Errorf("%s: %q printed %d times, want once\n%s", cmd[0], line, n, r)
			}
		}
		if strings.Contains(r.stderr, "# Warning:") {
			t.Errorf("%s: kustomize's raw warning lines on stderr\n%s", cmd[0], r)
		}
	}
}
