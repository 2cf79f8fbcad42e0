package e2e

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
)

// TestJourneyTenantCannotReadAnotherClone: team B's App runs under
// `syncd run`; team A, who knows the cache layout, tries to read team
// B's clone with a GitSource of a file URL or a path: kubectl apply is
// refused naming spec.url, and the clone's directory names neither team
// B's namespace nor its App. The operator's own config file may not
// point a file:// source into the cache either: `syncd plan` refuses it
// naming the field.
func TestJourneyTenantCannotReadAnotherClone(t *testing.T) {
	b := &appJourney{t: t, w: newWorkspace(t), cl: newCluster(t), ns: "tenant-b", name: "web",
		token: "gts-e2e-Tn7vB2qL9xW4kP3s", step: stepper(t)}
	sha := b.serveRepo()
	d := b.startDaemon()
	b.declare()
	b.waitReady(sha)
	b.step("team B's App Ready")

	clone := onlyClone(t, filepath.Join(b.w.cache, ".app-objects"))
	if rel, _ := filepath.Rel(b.w.cache, clone); strings.Contains(rel, b.ns) || strings.Contains(rel, "/"+b.name+"/") {
		t.Errorf("team B's clone is at %s: a path another team can name", rel)
	}
	ensureNamespace(t, "tenant-a")
	for _, url := range []string{"file://" + clone, clone} {
		manifest := b.w.file("steal.yaml", fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata: {name: steal}
spec: {url: %q, branch: main, interval: 5s}
`, url))
		out, err := kubectl("-n", "tenant-a", "apply", "-f", manifest)
		if err == nil {
			_, _ = kubectl("-n", "tenant-a", "delete", "gitsource/steal", "--ignore-not-found")
			t.Errorf("kubectl apply of a GitSource with url %s was admitted:\n%s", url, out)
			continue
		}
		if s := string(out); !strings.Contains(s, "spec.url") || !strings.Contains(s, "reads syncd's own disk") {
			t.Errorf("kubectl apply of a GitSource with url %s: want a refusal of spec.url saying it reads syncd's own disk:\n%s", url, out)
		}
	}
	b.step("team A's file URL refused")

	b.w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: steal
    git: {url: %q, branch: main, interval: 5m}
apps:
  - name: steal
    source: steal
    path: apps/web
    namespace: tenant-a
`, "file://"+clone))
	r := b.w.must(exitError, "plan", "--config", b.w.config, "--app", "steal", "--cache-dir", b.w.cache)
	if !strings.Contains(r.stderr, "sources[0].git.url: the file URL points inside syncd's cache directory") {
		t.Errorf("plan of a config whose file:// source is inside the cache: want the refusal naming sources[0].git.url\n%s", r)
	}
	b.step("a config file's file:// source inside the cache refused")

	b.deleteApp()
	b.step("team B's App deleted, pruned")
	d.stop()
	b.w.checkNoSecrets(b.token)
}

// TestJourneyTenantKubeconfig: under `syncd run`, team C's App runs as
// its service account deployer and applies through the kubeconfig of
// its spec.cluster, a Secret of its namespace (here the admin
// kubeconfig of the same cluster). While deployer may not read that
// Secret, the App is SecretNotFound naming the account, the Secret and
// what to grant, and nothing of it is applied; a RoleBinding granting
// get on the Secret lets it apply (a change of the Secret retries at
// once), and deleting it prunes. Neither the kubeconfig's token nor the
// Git token is ever printed.
func TestJourneyTenantKubeconfig(t *testing.T) {
	c := &appJourney{t: t, w: newWorkspace(t), cl: newCluster(t), ns: "tenant-c", name: "web",
		token: "gts-e2e-Kc3tR8vW1yZ6qH2m", step: stepper(t)}
	sha := c.serveRepo()
	d := c.startDaemon()
	ensureNamespace(t, c.ns)
	deployer := "--serviceaccount=" + c.ns + ":deployer"
	for _, args := range [][]string{
		{"create", "serviceaccount", "deployer"},
		{"create", "role", "deployer", "--verb=get,list,watch,create,update,patch,delete", "--resource=deployments.apps,services,configmaps"},
		{"create", "role", "deployer-git", "--verb=get", "--resource=secrets", "--resource-name=team-repo-token"},
		{"create", "rolebinding", "deployer", "--role=deployer", deployer},
		{"create", "rolebinding", "deployer-git", "--role=deployer-git", deployer},
		{"create", "secret", "generic", "cluster-kubeconfig", "--from-file=value=" + env.Kubeconfig},
	} {
		mustKubectl(t, append([]string{"-n", c.ns}, args...)...)
	}
	c.declareWith("  serviceAccountName: deployer\n  cluster: {name: remote, context: testenv, kubeConfig: {secretRef: {name: cluster-kubeconfig}}}\n")
	c.step("declare, start")

	var msg string
	waitFor(t, "App refused: deployer may not read the kubeconfig", time.Minute, func() (bool, string) {
		out, _ := kubectl("-n", c.ns, "get", "app/"+c.name, "-o", `jsonpath={.status.conditions[?(@.type=="Ready")].reason}: {.status.conditions[?(@.type=="Ready")].message}`)
		msg = string(out)
		return strings.HasPrefix(msg, "SecretNotFound: "), msg
	})
	for _, s := range []string{"Secret " + c.ns + "/cluster-kubeconfig", "cannot be read as system:serviceaccount:" + c.ns + ":deployer", "grant it get on Secret cluster-kubeconfig"} {
		if !strings.Contains(msg, s) {
			t.Errorf("Ready of the refused App: %s\nwant it to say %q", msg, s)
		}
	}
	for _, ref := range c.objects() {
		if _, err := c.cl.get(ref); !apierrors.IsNotFound(err) {
			t.Errorf("%s of the refused App: %v; want it not applied", ref, err)
		}
	}
	c.step("refused, nothing applied")

	mustKubectl(t, "-n", c.ns, "create", "role", "read-kubeconfig", "--verb=get", "--resource=secrets", "--resource-name=cluster-kubeconfig")
	mustKubectl(t, "-n", c.ns, "create", "rolebinding", "read-kubeconfig", "--role=read-kubeconfig", deployer)
	mustKubectl(t, "-n", c.ns, "annotate", "secret/cluster-kubeconfig", "example.com/granted=true")
	c.waitReady(sha)
	c.step("granted, applied")

	c.deleteApp()
	c.step("delete prunes")
	d.stop()
	c.w.checkNoSecrets(c.token, env.Config.BearerToken)
}

// onlyClone is the one Git clone below root (a directory holding HEAD
// and objects).
func onlyClone(t *testing.T, root string) string {
	t.Helper()
	found := gitDirs(t, root)
	if len(found) != 1 {
		t.Fatalf("clones below %s: %q; want one", root, found)
	}
	return found[0]
}
