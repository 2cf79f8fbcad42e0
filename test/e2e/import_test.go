package e2e

import (
	"bytes"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// fleetURL is the URL the fixture fleet's GitRepository names.
const fleetURL = "https://git.example.com/platform/fleet.git"

// TestJourneyImportFlux: a platform team moving from Flux runs syncd
// import flux in a checkout of its fleet repository (the importer's
// fixture: clusters/production, infrastructure and apps layers,
// dependsOn, postBuild.substitute and substituteFrom, a HelmRelease),
// reads the warnings, does what they say (the Secret's token key, the
// ConfigMap of variables, the Flux objects out of the repository),
// applies the printed objects with kubectl, and syncd run (App objects
// only) reconciles every App to Ready in dependsOn order.
func TestJourneyImportFlux(t *testing.T) {
	w := newWorkspace(t)
	step := stepper(t)
	const ns, token = "fleet-prod", "fleet-e2e-Hn3vK8sQ1zT6"
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "fleet")
	srv.RequireBasic("git", token)
	checkout := copyFleet(t, filepath.Join(w.dir, "fleet"), repo.URL)
	sha, err := repo.Commit("fleet without Flux objects", filesWithout(t, checkout, "toolkit.fluxcd.io"))
	if err != nil {
		t.Fatal(err)
	}
	step("fleet repository")

	r := w.syncdIn(checkout, "import", "flux", "-n", ns, "clusters/production", "infrastructure", "apps")
	if r.code != exitOK {
		t.Fatalf("want exit 0\n%s", r)
	}
	for _, want := range []string{
		"warning: clusters/production/flux-system/gotk-sync.yaml: GitRepository flux-system/flux-system: spec.secretRef: syncd reads the password or token from key token of Secret flux-system",
		"warning: clusters/production/infrastructure.yaml: Kustomization flux-system/infra-configs: spec.patches:",
		"warning: clusters/production/infrastructure.yaml: Kustomization flux-system/infra-controllers: spec.path: infrastructure/controllers holds Flux objects (infrastructure/controllers/metrics-server.yaml)",
		"warning: clusters/production/flux-system/gotk-sync.yaml: Kustomization flux-system/flux-system: spec.path: clusters/production holds only Flux objects",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("import's warnings lack %q\n%s", want, r)
		}
	}
	cfg := w.syncdIn(checkout, "import", "flux", "-o", "config", "clusters/production", "infrastructure", "apps")
	if cfg.code != exitOK || !strings.Contains(cfg.stdout, "kind: Config\nsources:\n  - name: flux-system\n") {
		t.Errorf("import -o config: want a syncd.yaml with source flux-system\n%s", cfg)
	}
	step("import")

	ensureNamespace(t, ns)
	mustKubectl(t, "-n", ns, "create", "secret", "generic", "flux-system", "--from-literal=username=git", "--from-literal=token="+token)
	mustKubectl(t, "-n", ns, "create", "configmap", "cluster-vars", "--from-literal=DOMAIN=fleet.example.com")
	// The HelmSource and the App of the HelmRelease are printed but not
	// applied here: this journey serves no chart repository at the
	// HelmRepository's URL (internal/importer's TestImportFleetReconciles
	// runs that App against one).
	if !strings.Contains(r.stdout, "kind: HelmSource\nmetadata:\n  name: metrics-server\n") {
		t.Errorf("import printed no HelmSource for the HelmRepository\n%s", r)
	}
	docs := strings.Split(r.stdout, "---\n")
	docs = slices.DeleteFunc(docs, func(doc string) bool { return strings.Contains(doc, "HelmSource") })
	mustKubectl(t, "apply", "-f", w.file("imported.yaml", strings.Join(docs, "---\n")))
	d := w.startDaemon()
	t.Cleanup(func() {
		// The Apps first, while the daemon runs to finalize them, then
		// their GitSource; each delete checked, so that nothing of this
		// journey is left for the next journeys' daemons.
		for _, args := range [][]string{
			{"-n", ns, "delete", "apps.syncd.dev", "--all", "--timeout=90s"},
			{"-n", ns, "delete", "gitsources.syncd.dev", "--all", "--timeout=30s"},
			{"delete", "namespace", "fleet-apps", "fleet-monitoring", "--ignore-not-found", "--wait=false"},
		} {
			if out, err := kubectl(args...); err != nil {
				t.Errorf("cleanup: kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
			}
		}
	})
	step("apply, start")

	for _, app := range []string{"infra-controllers", "infra-configs", "apps"} {
		mustKubectl(t, "-n", ns, "wait", "--for=condition=Ready", "app/"+app, "--timeout=120s")
		out := mustKubectl(t, "-n", ns, "get", "app/"+app, "-o", "jsonpath={.status.lastAppliedRevision}")
		if out != sha {
			t.Errorf("App %s lastAppliedRevision %q, want %s", app, out, sha)
		}
	}
	if got := mustKubectl(t, "-n", "fleet-apps", "get", "configmap/web-settings", "-o", "jsonpath={.data.CLUSTER} {.data.DOMAIN}"); got != "production fleet.example.com" {
		t.Errorf("web-settings CLUSTER and DOMAIN %q, want the App's substitute and its ConfigMap's value", got)
	}
	step("Apps Ready")

	// Deleted while syncd runs, the Apps prune through their finalizers;
	// the cleanup then has nothing to wait for.
	mustKubectl(t, "-n", ns, "delete", "apps.syncd.dev", "--all", "--timeout=90s")
	step("Apps deleted")
	d.stop()
	w.checkNoSecrets(token)
}

// copyFleet copies the importer's fixture fleet to dir, its
// GitRepository's URL replaced by url, and returns dir.
func copyFleet(t *testing.T, dir, url string) string {
	t.Helper()
	src := filepath.Join(repoRoot, "internal", "importer", "testdata", "fleet")
	err := filepath.WalkDir(src, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, path)
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		return os.WriteFile(out, bytes.ReplaceAll(data, []byte(fleetURL), []byte(url)), 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// filesWithout is the files below dir, by slash-separated path, except
// those containing marker.
func filesWithout(t *testing.T, dir, marker string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || bytes.Contains(data, []byte(marker)) {
			return err
		}
		rel, _ := filepath.Rel(dir, path)
		files[filepath.ToSlash(rel)] = data
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}
