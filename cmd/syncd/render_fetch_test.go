package main

import (
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/helmserver"
)

// renderApp runs syncd render for app web of cfg with the cache directory
// cache (no cluster: render takes no kubeconfig) and fails the test
// unless it exits with want; a failed render must print nothing on
// stdout.
func renderApp(t *testing.T, want int, cfg, cache string, args ...string) (stdout, stderr string) {
	t.Helper()
	code, stdout, stderr := runCmd(t, append([]string{"render", "--config", cfg, "--app", "web", "--cache-dir", cache}, args...)...)
	if code != want {
		t.Fatalf("render: exit %d, want %d\n%s%s", code, want, stdout, stderr)
	}
	if want != exitOK && stdout != "" {
		t.Errorf("a failed render printed objects:\n%s", stdout)
	}
	return stdout, stderr
}

// mustSay fails the test for each of wants that out lacks.
func mustSay(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s lacks %q:\n%s", what, w, out)
		}
	}
}

// TestRenderChartFromRepository: syncd render --config --app of a chart
// of a loopback Helm repository, without --path, fetches the version the
// app's range picks into the cache and prints its objects, the Secret
// redacted; a second render with the same cache downloads no archive
// (index.yaml only).
func TestRenderChartFromRepository(t *testing.T) {
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	for _, v := range []string{"0.1.0", "0.1.3", "0.2.0"} {
		if _, err := srv.Publish(repoChart(v)); err != nil {
			t.Fatal(err)
		}
	}
	cfg := helmRepoConfig(t, srv.URL, "shop", "shop", "~0.1")
	cache := t.TempDir()

	out, stderr := renderApp(t, exitOK, cfg, cache)
	mustSay(t, "render", out,
		"# manager: syncd-web  object: ConfigMap shop/shop-config", "chart-version: 0.1.3", "greeting: from-repo",
		"object: Secret shop/shop-pw", "object: apps/Deployment shop/shop", "<redacted>")
	if got := requestPaths(srv); len(got) != 2 || got[0] != "/index.yaml" || !strings.HasSuffix(got[1], "shop-0.1.3.tgz") {
		t.Errorf("the first render requested %v, want index.yaml and the 0.1.3 archive", got)
	}

	srv.ResetRequests()
	out, _ = renderApp(t, exitOK, cfg, cache, "-o", "json")
	mustSay(t, "render -o json", out, `"revision": "shop-0.1.3@sha256:`, `"name": "shop-config"`)
	if got := requestPaths(srv); !slices.Equal(got, []string{"/index.yaml"}) {
		t.Errorf("a second render with the same cache requested %v, want index.yaml only (the archive is cached by digest)", got)
	}
	for _, o := range []string{out, stderr} {
		if strings.Contains(o, helmSecret) {
			t.Errorf("render shows the Secret's value:\n%s", o)
		}
	}
}

// TestRenderChartRepositoryUnreachable: a repository that does not answer
// fails the render naming the source and the failure (not the cluster,
// which render never contacts); nothing is printed as objects.
func TestRenderChartRepositoryUnreachable(t *testing.T) {
	down := helmserver.Start()
	url := down.URL
	down.Close()
	cfg := helmRepoConfig(t, url, "shop", "shop", "")
	_, stderr := renderApp(t, exitError, cfg, t.TempDir())
	mustSay(t, "stderr", stderr, "app web", `source "charts"`, "Unreachable")
	if strings.Contains(stderr, "API server") {
		t.Errorf("the error blames the cluster for an unreachable repository:\n%s", stderr)
	}
}

// TestRenderOCIChartWithDockerConfig: a chart of a Helm repository source
// at an oci:// URL is fetched with the credentials of a Docker config
// file (the registry requires basic auth) and rendered; a second render
// with the same cache downloads nothing; a Docker config with a wrong
// password fails naming the source and the registry, printing neither
// objects nor a credential.
func TestRenderOCIChartWithDockerConfig(t *testing.T) {
	const secret = "render-registry-pw-5ecr3t"
	reg := startOCIRegistry(t)
	pushTestChart(t, reg, "0.1.0")
	pushTestChart(t, reg, "1.0.0")
	reg.RequireBasic("robot", secret)
	basic := func(pw string) string { return base64.StdEncoding.EncodeToString([]byte("robot:" + pw)) }
	dir := t.TempDir()
	config := func(name, pw string) string {
		docker := filepath.Join(dir, name+".json")
		if err := os.WriteFile(docker, []byte(`{"auths":{"`+reg.Host+`":{"auth":"`+basic(pw)+`"}}}`), 0o600); err != nil {
			t.Fatal(err)
		}
		return filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  helm: {url: "oci://%s/charts", interval: 1m, auth: {dockerConfigFile: %s}}
apps:
- name: web
  source: charts
  namespace: shop
  helm: {chart: shop, version: "0.x", releaseName: shop, values: {password: %s}}
`, reg.Host, docker, helmSecret)}), "syncd.yaml")
	}
	cfg, cache := config("right", secret), t.TempDir()

	out, stderr := renderApp(t, exitOK, cfg, cache)
	mustSay(t, "render", out, "object: ConfigMap shop/chart-version", `version: 0.1.0`, "object: Secret shop/shop-pw", "<redacted>")
	before := len(reg.Log())
	out2, stderr2 := renderApp(t, exitOK, cfg, cache)
	if out2 != out {
		t.Errorf("a second render printed something else:\n%s", out2)
	}
	for _, req := range reg.Log()[before:] {
		if strings.Contains(req, "/blobs/") || strings.HasPrefix(req, "GET /v2/charts/shop/manifests/") {
			t.Errorf("a second render with the same cache downloaded %s", req)
		}
	}

	_, stderr3 := renderApp(t, exitError, config("wrong", "wrong-"+secret), t.TempDir())
	mustSay(t, "stderr", stderr3, "app web", `source "charts"`, "oci://"+reg.Host+"/charts", "AuthFailed")
	for _, o := range []string{out, stderr, stderr2, stderr3} {
		for _, s := range []string{secret, basic("wrong-" + secret), helmSecret} {
			if strings.Contains(o, s) {
				t.Errorf("render shows a secret (%q):\n%s", s, o)
			}
		}
	}
}

// TestRenderOCIManifests: an app of an OCI source of plain manifests
// renders from the artifact without --path; a second render with the
// same cache downloads no layer.
func TestRenderOCIManifests(t *testing.T) {
	reg := startOCIRegistry(t)
	if _, err := reg.PushFiles("team/web", "prod", ociManifests("blue")); err != nil {
		t.Fatal(err)
	}
	cfg := ociConfig(t, reg, "team/web", "shop", "tag: prod", "")
	cache := t.TempDir()
	out, _ := renderApp(t, exitOK, cfg, cache)
	mustSay(t, "render", out, "# manager: syncd-web  object: ConfigMap shop/art", "color: blue")
	before := len(reg.Log())
	renderApp(t, exitOK, cfg, cache)
	// A new process has no revision in memory: it resolves the tag and
	// reads the manifest again, but the layer's tree is on disk.
	for _, req := range reg.Log()[before:] {
		if strings.Contains(req, "/blobs/") {
			t.Errorf("a second render with the same cache downloaded %s", req)
		}
	}
}

// TestRenderRepositoryRootPath: --path at a repository's root, which
// holds charts below it but no Chart.yaml, is refused naming each chart
// and the --path to pass (helm users pass the root); the suggested
// --path renders.
func TestRenderRepositoryRootPath(t *testing.T) {
	root := writeFiles(t, map[string]string{
		"repo/charts/ingress-nginx/Chart.yaml":            "apiVersion: v2\nname: ingress-nginx\nversion: 1.0.0\n",
		"repo/charts/ingress-nginx/templates/cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-cm\n",
		"repo/charts/ingress-nginx/charts/sub/Chart.yaml": "apiVersion: v2\nname: sub\nversion: 1.0.0\n",
		"repo/charts/cert-manager/Chart.yaml":             "apiVersion: v2\nname: cert-manager\nversion: 1.0.0\n",
		"repo/README.md":                                  "charts\n",
		"syncd.yaml": `apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  git: {url: "https://git.example.com/charts.git", branch: main, interval: 1m}
apps:
- name: web
  source: charts
  namespace: default
  helm: {releaseName: edge}
`,
	})
	cfg, repo := filepath.Join(root, "syncd.yaml"), filepath.Join(root, "repo")
	_, stderr := renderApp(t, exitError, cfg, t.TempDir(), "--path", repo)
	mustSay(t, "stderr", stderr,
		"app web: "+repo+" holds no Chart.yaml",
		"charts/cert-manager holds a Chart.yaml: use --path "+filepath.Join(repo, "charts/cert-manager"),
		"charts/ingress-nginx holds a Chart.yaml: use --path "+filepath.Join(repo, "charts/ingress-nginx"))
	if strings.Contains(stderr, "charts/sub") {
		t.Errorf("the error lists a subchart as a chart to render:\n%s", stderr)
	}
	out, _ := renderApp(t, exitOK, cfg, t.TempDir(), "--path", filepath.Join(repo, "charts/ingress-nginx"))
	mustSay(t, "render of the suggested --path", out, "object: ConfigMap default/edge-cm")
}

// TestRenderChartPackageValuesFile: syncd render of a repository chart
// reads helm.valuesFiles from the fetched chart package, as syncd apply
// does.
func TestRenderChartPackageValuesFile(t *testing.T) {
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	chart := repoChart("0.1.0")
	chart.Files["values-prod.yaml"] = "greeting: from-the-package\n"
	if _, err := srv.Publish(chart); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": `apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  helm: {url: ` + srv.URL + `, interval: 1m}
apps:
- name: web
  source: charts
  namespace: shop
  helm: {chart: shop, releaseName: shop, valuesFiles: [values-prod.yaml]}
`}), "syncd.yaml")
	out, _ := renderApp(t, exitOK, cfg, t.TempDir())
	mustSay(t, "render", out, "object: ConfigMap shop/shop-config", "greeting: from-the-package")
}
