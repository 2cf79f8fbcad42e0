package e2e

import (
	"fmt"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyDriftAppObjects: syncd drift checks App objects as it
// checks a config file's apps: --app NAME -n NS, every App of -n, every
// App of every namespace with -A; an App of a HelmSource in a listing is
// skipped with a warning; a namespace without Apps has no drift.
func TestJourneyDriftAppObjects(t *testing.T) {
	w := newWorkspace(t)
	const ns, empty = "drift-objects-e2e", "drift-objects-empty"
	ensureNamespace(t, ns)
	ensureNamespace(t, empty)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "driftobjects")
	if _, err := repo.Commit("web", map[string][]byte{"apps/web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {a: git}\n")}); err != nil {
		t.Fatal(err)
	}
	// Someone else wrote the ConfigMap, with another value.
	mustKubectl(t, "-n", ns, "create", "configmap", "settings", "--from-literal=a=by-hand")
	mustKubectl(t, "-n", ns, "apply", "-f", w.file("objects.yaml", fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata: {name: deploy}
spec: {url: %s, branch: main, interval: 1m}
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata: {name: web}
spec:
  sourceRef: {kind: GitSource, name: deploy}
  path: apps/web
---
apiVersion: syncd.dev/v1alpha1
kind: App
metadata: {name: chart}
spec:
  sourceRef: {kind: HelmSource, name: charts}
  helm: {chart: podinfo, version: "6.x"}
`, repo.URL)))
	t.Cleanup(func() {
		// kubectl refuses --all beside a named object: two deletes, each
		// checked, so that no App of this journey is left for the next
		// journeys' daemons to reconcile.
		for _, what := range [][]string{{"apps.syncd.dev,gitsources.syncd.dev", "--all"}, {"configmap/settings", "--ignore-not-found"}} {
			if out, err := kubectl(append([]string{"-n", ns, "delete", "--timeout=30s"}, what...)...); err != nil {
				t.Errorf("cleanup: kubectl delete %s: %v\n%s", strings.Join(what, " "), err, out)
			}
		}
	})
	finding := "ConfigMap " + ns + "/settings"
	skipped := "warning: App " + ns + "/chart: its source is a HelmSource; drift without --config checks Apps of GitSources only"

	r := w.must(exitChanges, "drift", "--app", "web", "-n", ns, "--cache-dir", w.cache)
	if !strings.Contains(r.stdout, finding) || strings.Contains(r.stdout, "chart") {
		t.Errorf("drift --app web -n: want a finding on %s and nothing of App chart\n%s", finding, r)
	}
	r = w.must(exitChanges, "drift", "-n", ns, "--cache-dir", w.cache)
	if !strings.Contains(r.stdout, finding) || !strings.Contains(r.stdout, skipped) {
		t.Errorf("drift -n: want the finding and %q\n%s", skipped, r)
	}
	// Other journeys' Apps may be anywhere, broken on purpose: only
	// this one's finding is checked.
	r = w.syncd("drift", "-A", "-o", "json", "--cache-dir", w.cache)
	if (r.code != exitChanges && r.code != exitError) || !strings.Contains(r.stdout, `"name": "settings"`) {
		t.Errorf("drift -A: want exit 2 (or 1 for another journey's broken App) and the finding\n%s", r)
	}
	w.must(exitOK, "drift", "-n", empty)
	uiDriftOfApp(t, w, ns)
	r = w.must(exitError, "drift", "--app", "chart", "-n", ns)
	if !strings.Contains(r.stderr, "its source is a HelmSource") {
		t.Errorf("drift --app of a HelmSource App: want an error naming the source kind\n%s", r)
	}
}

// uiDriftOfApp: syncd ui (no --config) shows App web's drift on the
// ConfigMap's ownership map and in the drift feed, from the same check
// as syncd drift --app -n, with the culprit.
func uiDriftOfApp(t *testing.T, w *workspace, ns string) {
	t.Helper()
	base := startUI(t, w, "--cache-dir", w.cache)
	obj := uiGet(t, w, base+"/object?app=web&ns="+ns+"&version=v1&kind=ConfigMap&namespace="+ns+"&name=settings")
	for _, want := range []string{`<section class="drift" aria-label="Drift">`, "kubectl-create", "by-hand", `taken-over · kubectl-create (Update`} {
		if !strings.Contains(obj, want) {
			t.Errorf("the ConfigMap's ownership map for App %s/web does not show %q:\n%s", ns, want, obj)
		}
	}
	if strings.Contains(obj, "drift is computed for") {
		t.Errorf("the ConfigMap's ownership map for App %s/web says it shows no drift:\n%s", ns, obj)
	}
}
