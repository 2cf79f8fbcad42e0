package main

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/importer"
	"syncd.dev/syncd/internal/testenv"
	"syncd.dev/syncd/internal/testenv/gitserver"
	"syncd.dev/syncd/internal/testenv/helmserver"
)

// fleetFixture is the Flux fleet repository of the importer's tests.
const fleetFixture = "../../internal/importer/testdata/fleet"

// fleetURL is the URL the fixture's GitRepository names.
const fleetURL = "https://git.example.com/platform/fleet.git"

// importCRDs are minimal CRDs of the Flux and Argo CD kinds the
// --from-cluster test creates: served, any spec.
var importCRDs = []struct{ group, kind, plural, version string }{
	{"source.toolkit.fluxcd.io", "GitRepository", "gitrepositories", "v1"},
	{"kustomize.toolkit.fluxcd.io", "Kustomization", "kustomizations", "v1"},
	{"argoproj.io", "Application", "applications", "v1alpha1"},
}

// installImportCRDs creates importCRDs for one test.
func installImportCRDs(t *testing.T, dyn dynamic.Interface) {
	t.Helper()
	for _, c := range importCRDs {
		name := c.plural + "." + c.group
		u := &unstructured.Unstructured{Object: map[string]any{
			"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
			"metadata": map[string]any{"name": name},
			"spec": map[string]any{
				"group": c.group, "scope": "Namespaced",
				"names": map[string]any{"kind": c.kind, "plural": c.plural},
				"versions": []any{map[string]any{"name": c.version, "served": true, "storage": true,
					"schema": map[string]any{"openAPIV3Schema": map[string]any{"type": "object", "x-kubernetes-preserve-unknown-fields": true}}}},
			},
		}}
		waitCRDNotTerminating(t, dyn, name)
		if _, err := dyn.Resource(crdResource).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = dyn.Resource(crdResource).Delete(context.Background(), name, metav1.DeleteOptions{}) })
		gvr := schema.GroupVersionResource{Group: c.group, Version: c.version, Resource: c.plural}
		poll(t, "CRD "+name+" served", func() (bool, string) {
			_, err := dyn.Resource(gvr).List(context.Background(), metav1.ListOptions{})
			return err == nil, fmt.Sprint(err)
		})
	}
}

// fluxDocs are the fixture's production Flux objects other than the
// bootstrap Kustomization (which a directory import leaves out, having
// seen that its path holds only Flux objects), in namespace ns.
func fluxDocs(t *testing.T, ns string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, f := range []string{"clusters/production/flux-system/gotk-sync.yaml", "clusters/production/infrastructure.yaml", "clusters/production/apps.yaml"} {
		for _, u := range readObjects(t, filepath.Join(fleetFixture, f)) {
			if u.GetKind() == "Kustomization" && u.GetName() == "flux-system" {
				continue
			}
			u.SetNamespace(ns)
			out = append(out, u)
		}
	}
	return out
}

// readObjects decodes a multi-document YAML file.
func readObjects(t *testing.T, path string) []*unstructured.Unstructured {
	t.Helper()
	docs, _, err := importer.Read([]string{path}, nil)
	if err != nil {
		t.Fatal(err)
	}
	var out []*unstructured.Unstructured
	for _, d := range docs {
		out = append(out, d.Object)
	}
	return out
}

// writeYAMLObjects writes objects as one multi-document YAML file.
func writeYAMLObjects(t *testing.T, path string, objs []*unstructured.Unstructured) {
	t.Helper()
	var docs []string
	for _, u := range objs {
		data, err := yaml.Marshal(u.Object)
		if err != nil {
			t.Fatal(err)
		}
		docs = append(docs, string(data))
	}
	if err := os.WriteFile(path, []byte(strings.Join(docs, "---\n")), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestImportFromCluster: syncd import --from-cluster reads the Flux and
// Argo CD objects of the API server (minimal CRDs of their kinds), as a
// service account that may list those kinds and nothing else (no
// Secret: import never reads one), and prints what importing the same
// objects from a file prints, with the warnings naming "cluster".
func TestImportFromCluster(t *testing.T) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	installImportCRDs(t, dyn)
	ns := env.Namespace(t)
	objs := fluxDocs(t, ns)
	argo := readObjects(t, "../../internal/importer/testdata/argocd/apps/guestbook.yaml")[0]
	argo.SetNamespace(ns)
	for _, u := range append(slices.Clone(objs), argo) {
		gvr := u.GroupVersionKind().GroupVersion().WithResource(strings.ToLower(u.GetKind()) + "s")
		if u.GetKind() == "GitRepository" {
			gvr.Resource = "gitrepositories"
		}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("%s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	kubeconfig := importerKubeconfig(t, ns)

	dir := t.TempDir()
	file := filepath.Join(dir, "flux.yaml")
	writeYAMLObjects(t, file, objs)
	fromFile := syncd(t, "import", "flux", "-n", "team", file)
	fromCluster := runAs(kubeconfig, "import", "flux", "--from-cluster", "--from-namespace", ns, "-n", "team")
	if fromCluster.code != 0 || fromFile.code != 0 {
		t.Fatalf("import from the cluster exit %d, from a file exit %d\n%s\n%s", fromCluster.code, fromFile.code, fromCluster.stderr, fromFile.stderr)
	}
	if diff := cmp.Diff(fromFile.stdout, fromCluster.stdout); diff != "" {
		t.Errorf("objects imported from the cluster differ from those of a file (-file +cluster):\n%s", diff)
	}
	if diff := cmp.Diff(strings.ReplaceAll(fromFile.stderr, filepath.ToSlash(file)+":", "cluster:"), fromCluster.stderr); diff != "" {
		t.Errorf("warnings from the cluster differ from those of a file (-file +cluster):\n%s", diff)
	}
	if !strings.Contains(fromCluster.stdout, "name: infra-controllers") || !strings.Contains(fromCluster.stderr, "warning: cluster: Kustomization "+ns+"/infra-configs: spec.patches:") {
		t.Errorf("the import from the cluster lacks infra-controllers or the warning about infra-configs' patches:\n%s\n%s", fromCluster.stdout, fromCluster.stderr)
	}

	r := runAs(kubeconfig, "import", "argocd", "--from-cluster", "--from-namespace", ns)
	if r.code != 0 || !strings.Contains(r.stdout, "kind: App\nmetadata:\n  name: guestbook\n  namespace: "+ns) {
		t.Errorf("import argocd --from-cluster: exit %d, want the App guestbook in %s\n%s\n%s", r.code, ns, r.stdout, r.stderr)
	}
}

// importerKubeconfig is a kubeconfig of a service account that may only
// list the Flux and Argo CD kinds in ns.
func importerKubeconfig(t *testing.T, ns string) string {
	t.Helper()
	ctx := context.Background()
	cfg, err := env.ServiceAccountConfig(ctx, ns, "importer")
	if err != nil {
		t.Fatal(err)
	}
	rules := []rbacv1.PolicyRule{{
		APIGroups: []string{"source.toolkit.fluxcd.io", "kustomize.toolkit.fluxcd.io", "helm.toolkit.fluxcd.io", "argoproj.io"},
		Resources: []string{"*"}, Verbs: []string{"list"},
	}}
	if err := env.Grant(ctx, ns, "importer", ns, rules); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "importer.kubeconfig")
	if err := testenv.WriteKubeconfig(cfg, path); err != nil {
		t.Fatal(err)
	}
	return path
}

// runAs runs the command line in-process with another kubeconfig than
// the test control plane's admin.
func runAs(kubeconfig string, args ...string) result {
	var out, errOut bytes.Buffer
	code := run(context.Background(), append(args, "--kubeconfig", kubeconfig), &out, &errOut)
	return result{code: code, stdout: out.String(), stderr: errOut.String()}
}

// TestImportFleetReconciles: the GitSource and Apps syncd import flux
// prints for the fixture fleet's production cluster, applied to the API
// server, reconcile to Ready under syncd run: the fleet's repository
// (served on loopback, with the Flux objects removed as the warnings
// say) at the GitRepository's URL, its token in key token of the
// Secret the GitRepository names, the ConfigMap of variables in the
// Apps' namespace. The Apps depend on each other in Flux's order and
// the variables are substituted.
func TestImportFleetReconciles(t *testing.T) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	installAppCRDs(t, dyn)
	ns := env.Namespace(t)
	const token = "fleet-token-Wq8zR2pL"
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "fleet")
	srv.RequireBasic("git", token)
	charts := helmserver.Start()
	t.Cleanup(charts.Close)
	if _, err := charts.Publish(helmserver.Chart{Name: "metrics-server", Version: "3.12.2", Files: map[string]string{
		"values.yaml":       "replicas: 1\n",
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: metrics-server-settings}\ndata: {replicas: \"{{ .Values.replicas }}\"}\n",
	}}); err != nil {
		t.Fatal(err)
	}
	fleet := copyFleet(t, map[string]string{fleetURL: repo.URL, fleetChartsURL: charts.URL + "/"})
	sha, err := repo.Commit("fleet", fleetWithoutFlux(t, fleet))
	if err != nil {
		t.Fatal(err)
	}

	imp := syncd(t, "import", "flux", "-n", ns, filepath.Join(fleet, "clusters/production"), filepath.Join(fleet, "infrastructure"), filepath.Join(fleet, "apps"))
	if imp.code != 0 {
		t.Fatalf("import: exit %d\n%s", imp.code, imp.stderr)
	}
	cs := env.Clientset(t)
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "flux-system"}, StringData: map[string]string{"username": "git", "password": token, "token": token}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars"}, Data: map[string]string{"DOMAIN": "fleet.example.com"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { deleteNamespaces(cs, "fleet-apps", "fleet-monitoring") })
	names := applyImported(t, dyn, imp.stdout)
	if diff := cmp.Diff([]string{"App/apps", "App/infra-configs", "App/infra-controllers", "App/metrics-server", "GitSource/flux-system", "HelmSource/metrics-server"}, names); diff != "" {
		t.Errorf("imported objects (-want +got):\n%s", diff)
	}
	startSyncd(t, "run", "--kubeconfig", env.Kubeconfig, "--inventory-namespace", invNamespace(t), "--leader-elect=false", "--cache-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	apps := dyn.Resource(v1alpha1.AppResource).Namespace(ns)
	t.Cleanup(func() { deleteApps(t, apps) })
	for _, name := range []string{"infra-controllers", "infra-configs", "apps", "metrics-server"} {
		poll(t, "App "+name+" Ready", func() (bool, string) {
			status, reason, rev := readyOf(t, apps, name)
			// The chart's App is at the chart's version, the others at
			// the fleet's commit.
			return status == "True" && (rev == sha || name == "metrics-server" && strings.Contains(rev, "3.12.2")), status + " " + reason + " " + rev
		})
	}
	cm, err := cs.CoreV1().ConfigMaps("fleet-apps").Get(ctx, "web-settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"CLUSTER": "production", "DOMAIN": "fleet.example.com"}, cm.Data); diff != "" {
		t.Errorf("web-settings, substituted from the App's substitute and substituteFrom (-want +got):\n%s", diff)
	}
}

// fleetChartsURL is the fixture's HelmRepository URL, replaced by a
// loopback chart repository's.
const fleetChartsURL = "https://kubernetes-sigs.github.io/metrics-server/"

// copyFleet copies the fixture fleet into a temporary directory with
// each URL of urls (the GitRepository's, the HelmRepository's) replaced
// by its loopback server's.
func copyFleet(t *testing.T, urls map[string]string) string {
	t.Helper()
	dir := filepath.Join(t.TempDir(), "fleet")
	err := filepath.WalkDir(fleetFixture, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(fleetFixture, path)
		out := filepath.Join(dir, rel)
		if err := os.MkdirAll(filepath.Dir(out), 0o755); err != nil {
			return err
		}
		for from, to := range urls {
			data = bytes.ReplaceAll(data, []byte(from), []byte(to))
		}
		return os.WriteFile(out, data, 0o644)
	})
	if err != nil {
		t.Fatal(err)
	}
	return dir
}

// fleetWithoutFlux is the fleet's files without those holding Flux
// objects (the migration's next step: the imported objects replace
// them), by slash-separated path.
func fleetWithoutFlux(t *testing.T, dir string) map[string][]byte {
	t.Helper()
	files := map[string][]byte{}
	err := filepath.WalkDir(dir, func(path string, e os.DirEntry, err error) error {
		if err != nil || e.IsDir() {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil || bytes.Contains(data, []byte("toolkit.fluxcd.io")) {
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

// applyImported creates the objects of syncd import's output and
// returns them all as sorted "Kind/name".
func applyImported(t *testing.T, dyn dynamic.Interface, out string) []string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "imported.yaml")
	if err := os.WriteFile(path, []byte(out), 0o644); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, u := range readObjects(t, path) {
		names = append(names, u.GetKind()+"/"+u.GetName())
		gvr := v1alpha1.GroupVersion.WithResource(strings.ToLower(u.GetKind()) + "s")
		if _, err := dyn.Resource(gvr).Namespace(u.GetNamespace()).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s %s: %v", u.GetKind(), u.GetName(), err)
		}
	}
	slices.Sort(names)
	return names
}

// deleteApps deletes a test's Apps while syncd still runs (their
// finalizers) and waits until they are gone.
func deleteApps(t *testing.T, apps dynamic.ResourceInterface) {
	l, err := apps.List(context.Background(), metav1.ListOptions{})
	if err != nil {
		return
	}
	for _, a := range l.Items {
		_ = apps.Delete(context.Background(), a.GetName(), metav1.DeleteOptions{})
	}
	poll(t, "the test's Apps are gone", func() (bool, string) {
		l, err := apps.List(context.Background(), metav1.ListOptions{})
		return err == nil && len(l.Items) == 0, fmt.Sprint(err)
	})
}

// deleteNamespaces deletes namespaces a test's Apps created (prune
// never deletes a Namespace).
func deleteNamespaces(cs kubernetes.Interface, names ...string) {
	for _, n := range names {
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), n, metav1.DeleteOptions{})
	}
}

// TestImportMalformedObject: an object with a field of the wrong type
// (a URL holding a password, given as a list) is not imported, and the
// warning names the file, the object and the field without printing
// any of the password; the well-formed objects are still printed.
func TestImportMalformedObject(t *testing.T) {
	const password = "Zq7pL0ngPassw0rd"
	dir := writeFiles(t, map[string]string{"sources.yaml": `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: broken, namespace: flux-system}
spec:
  interval: 1m
  url: [https://git:` + password + `@git.example.com/x.git]
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: good, namespace: flux-system}
spec:
  interval: 1m
  url: https://git.example.com/y.git
  ref: {branch: main}
`})
	file := filepath.Join(dir, "sources.yaml")
	r := syncd(t, "import", "flux", file)
	if r.code != 0 {
		t.Fatalf("exit %d, want 0 (the good object is imported)\n%s", r.code, r.stderr)
	}
	if !strings.Contains(r.stdout, "name: good") || strings.Contains(r.stdout, "name: broken") {
		t.Errorf("stdout has not only GitSource good:\n%s", r.stdout)
	}
	want := "warning: " + filepath.ToSlash(file) + ": GitRepository flux-system/broken: spec.url: must be a string, not a list"
	if !strings.Contains(r.stderr, want) || !strings.Contains(r.stderr, "not imported") {
		t.Errorf("stderr has no %q ... not imported:\n%s", want, r.stderr)
	}
	for i := 0; i+5 <= len(password); i++ {
		if run := password[i : i+5]; strings.Contains(r.stdout+r.stderr, run) {
			t.Errorf("the output prints %q of the password:\n%s\n%s", run, r.stdout, r.stderr)
		}
	}
}

// TestImportNothingImported: an import whose only object is left out
// (a field of the wrong type) exits 1 saying nothing was imported and
// that the warnings say why, not that no object was found; an input
// without any of the tool's objects still says none was found.
func TestImportNothingImported(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"broken.yaml": "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata: {name: broken, namespace: flux-system}\nspec: {interval: 1m, url: [https://git.example.com/x.git]}\n",
		"other.yaml":  "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	})
	r := syncd(t, "import", "flux", filepath.Join(dir, "broken.yaml"))
	if want := "nothing imported from " + filepath.Join(dir, "broken.yaml") + ": no flux object could be imported; the 1 warning(s) above say why"; r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Errorf("only a left-out object: exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
	}
	r = syncd(t, "import", "flux", filepath.Join(dir, "other.yaml"))
	if want := "no flux objects to import found in " + filepath.Join(dir, "other.yaml"); r.code != exitError || !strings.Contains(r.stderr, want) {
		t.Errorf("no Flux object: exit %d, stderr lacks %q:\n%s", r.code, want, r.stderr)
	}
}
