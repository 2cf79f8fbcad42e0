package main

import (
	"archive/tar"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// ociManifests is an artifact as flux push artifact writes it from a
// directory holding a kustomization.
func ociManifests(color string) map[string]string {
	return map[string]string{
		"kustomization.yaml": "resources: [cm.yaml]\n",
		"cm.yaml":            "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: art\ndata:\n  color: " + color + "\n",
	}
}

// ociConfig writes a syncd.yaml whose source art follows repo on reg
// (the oci section's other fields given as extra) and whose app web
// applies it into ns.
func ociConfig(t *testing.T, reg *ociregistry.Registry, repo, ns, extra, app string) string {
	t.Helper()
	return filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: art
  oci: {url: %s, interval: 1m, %s}
apps:
- name: web
  source: art
  namespace: %s
  pruneBudget: 100
%s`, reg.URL(repo), extra, ns, app)}), "syncd.yaml")
}

func startOCIRegistry(t *testing.T) *ociregistry.Registry {
	t.Helper()
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	return reg
}

// TestOCIManifests: an artifact of a kustomization in a loopback registry
// applies, re-applies as a no-op without downloading the layer again
// (the tree is cached by digest), reports drift, and a re-pushed tag shows in syncd plan with
// the conflict it meets.
func TestOCIManifests(t *testing.T) {
	ns := env.Namespace(t)
	reg := startOCIRegistry(t)
	if _, err := reg.PushFiles("team/web", "prod", ociManifests("blue")); err != nil {
		t.Fatal(err)
	}
	cfg := ociConfig(t, reg, "team/web", ns, "tag: prod", "")
	cache := t.TempDir()
	run := func(what string, want int, args ...string) result {
		t.Helper()
		r := syncd(t, append(args, "--config", cfg, "--cache-dir", cache)...)
		if r.code != want {
			t.Fatalf("%s: code %d, want %d\n%s%s", what, r.code, want, r.stdout, r.stderr)
		}
		return r
	}

	r := run("apply", exitOK, "apply")
	if !strings.Contains(r.stdout, "ConfigMap "+ns+"/art created") {
		t.Errorf("apply output lacks the ConfigMap:\n%s", r.stdout)
	}
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "art", metav1.GetOptions{})
	if err != nil || cm.Data["color"] != "blue" {
		t.Fatalf("ConfigMap art = %v (get: %v), want color blue", cm.Data, err)
	}

	before := len(reg.Log())
	r = run("re-apply", exitOK, "apply")
	for _, req := range reg.Log()[before:] {
		if strings.Contains(req, "/blobs/") {
			t.Errorf("the re-apply of an unchanged tag downloaded %s", req)
		}
	}
	if strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "configured") {
		t.Errorf("re-apply of the same artifact wrote something:\n%s", r.stdout)
	}
	run("drift", exitOK, "drift")

	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "art", types.MergePatchType,
		[]byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	r = run("drift after a patch", exitChanges, "drift")
	if !strings.Contains(r.stdout, ".data.color was changed from blue to green by operator") {
		t.Errorf("drift does not name the patched field:\n%s", r.stdout)
	}

	if _, err := reg.PushFiles("team/web", "prod", ociManifests("red")); err != nil {
		t.Fatal(err)
	}
	// The operator's patch now conflicts with the new color: plan shows
	// both and the conflict.
	r = run("plan", exitConflict, "plan", "--app", "web")
	for _, want := range []string{"ConfigMap " + ns + "/art: update", "+  color: red", "-  color: green", `.data.color is owned by "operator"`} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan does not show %q:\n%s%s", want, r.stdout, r.stderr)
		}
	}
}

// TestOCIChart: a chart pushed as helm push does, followed by a semver
// range, renders with Helm, applies and re-applies as a no-op; a newer
// version in the range is picked up.
func TestOCIChart(t *testing.T) {
	ns := env.Namespace(t)
	reg := startOCIRegistry(t)
	chart := func(version, greeting string) {
		t.Helper()
		files := map[string]string{
			"Chart.yaml":          "apiVersion: v2\nname: shop\nversion: " + version + "\n",
			"values.yaml":         "greeting: " + greeting + "\n",
			"templates/conf.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-config\ndata:\n  greeting: {{ .Values.greeting | quote }}\n",
		}
		if _, err := reg.PushChart("charts/shop", "shop", version, files); err != nil {
			t.Fatal(err)
		}
	}
	chart("0.1.0", "hello")
	chart("1.0.0", "too-new")
	cfg := ociConfig(t, reg, "charts/shop", ns, `semver: "0.x"`, "  helm: {releaseName: shop}\n")
	cache := t.TempDir()
	r := syncd(t, "apply", "--config", cfg, "--cache-dir", cache)
	if r.code != exitOK || !strings.Contains(r.stdout, "ConfigMap "+ns+"/shop-config created") {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	r = syncd(t, "apply", "--config", cfg, "--cache-dir", cache)
	if r.code != exitOK || strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "configured") {
		t.Errorf("re-apply: code %d, want a no-op\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := syncd(t, "drift", "--config", cfg, "--cache-dir", cache); r.code != exitOK {
		t.Errorf("drift: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	chart("0.2.0", "bonjour")
	r = syncd(t, "apply", "--config", cfg, "--cache-dir", cache)
	if r.code != exitOK || !strings.Contains(r.stdout, "ConfigMap "+ns+"/shop-config configured") {
		t.Fatalf("apply of 0.2.0: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "shop-config", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "bonjour" {
		t.Errorf("shop-config = %v (get: %v), want the 0.2.0 chart's greeting", cm.Data, err)
	}
}

// TestOCIRefused: a missing tag, a bad semver range, an artifact with a
// path leaving its directory or a symlink out of it, and wrong registry
// credentials each fail with an error saying so; nothing is applied and
// no credential is printed.
func TestOCIRefused(t *testing.T) {
	const secret = "oci-pw-5ecr3t"
	reg := startOCIRegistry(t)
	push := func(tag string, entries ...ociregistry.Entry) {
		if _, err := reg.Push("app", tag, ociregistry.FluxConfig, ociregistry.FluxContent, entries); err != nil {
			t.Fatal(err)
		}
	}
	cm := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: art\n"
	push("dotdot", ociregistry.Entry{Header: tar.Header{Name: "cm.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, Body: cm},
		ociregistry.Entry{Header: tar.Header{Name: "../../escape.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, Body: cm})
	push("symlink", ociregistry.Entry{Header: tar.Header{Name: "cm.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, Body: cm},
		ociregistry.Entry{Header: tar.Header{Name: "host", Typeflag: tar.TypeSymlink, Linkname: "../../../etc"}})
	push("good", ociregistry.Files(map[string]string{"cm.yaml": cm})...)
	pw := filepath.Join(t.TempDir(), "pw")
	if err := os.WriteFile(pw, []byte("wrong-"+secret), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		extra string
		auth  bool
		want  []string
	}{
		"missing tag":    {extra: "tag: nope", want: []string{"tag \"nope\" does not exist", "RefNotFound"}},
		"bad semver":     {extra: `semver: "1.x.y.z"`, want: []string{"sources[0].oci.semver", "not a semver constraint"}},
		"dotdot":         {extra: "tag: dotdot", want: []string{"ArtifactRefused", `entry "../../escape.yaml"`}},
		"symlink out":    {extra: "tag: symlink", want: []string{"ArtifactRefused", `entry "host": is a symlink to "../../../etc"`}},
		"wrong password": {extra: "tag: good, auth: {username: robot, passwordFile: " + pw + "}", auth: true, want: []string{"AuthFailed", "401"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.auth {
				reg.RequireBasic("robot", secret)
				defer reg.RequireBasic("", "")
			}
			ns := env.Namespace(t)
			cfg := ociConfig(t, reg, "app", ns, tc.extra, "")
			r := syncd(t, "apply", "--config", cfg, "--cache-dir", t.TempDir())
			if r.code == exitOK {
				t.Fatalf("apply succeeded:\n%s", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("output does not mention %q:\n%s%s", w, r.stdout, r.stderr)
				}
			}
			if strings.Contains(r.stdout+r.stderr, secret) {
				t.Errorf("output shows the password:\n%s%s", r.stdout, r.stderr)
			}
			if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "art", metav1.GetOptions{}); err == nil {
				t.Error("ConfigMap art was applied from a refused source")
			}
		})
	}
}

// TestOCIHelmSource: a Helm repository source at an oci:// URL with
// apps[].helm.chart/version renders the highest matching chart version
// pushed as helm push does, applies it, re-applies as a no-op without
// downloading it again, reports no drift, shows a new version in range in
// syncd plan, and never prints the Secret's value.
func TestOCIHelmSource(t *testing.T) {
	ns := env.Namespace(t)
	reg := startOCIRegistry(t)
	push := func(version string) { pushTestChart(t, reg, version) }
	push("0.1.0")
	push("1.0.0")
	cfg := helmRepoConfig(t, "oci://"+reg.Host+"/charts", ns, "shop", "0.x")
	cache := t.TempDir()
	var outputs []string
	run := func(what string, want int, args ...string) result {
		t.Helper()
		r := syncd(t, append(args, "--config", cfg, "--cache-dir", cache)...)
		outputs = append(outputs, what+":\n"+r.stdout+r.stderr)
		if r.code != want {
			t.Fatalf("%s: code %d, want %d\n%s%s", what, r.code, want, r.stdout, r.stderr)
		}
		return r
	}
	r := run("apply", exitOK, "apply")
	for _, want := range []string{"ConfigMap " + ns + "/shop-config created", "Secret " + ns + "/shop-pw created", "ConfigMap " + ns + "/chart-version created"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r.stdout)
		}
	}
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "chart-version", metav1.GetOptions{})
	if err != nil || cm.Data["version"] != "0.1.0" {
		t.Fatalf("chart-version = %v (get: %v), want 0.1.0, the highest in 0.x", cm.Data, err)
	}
	before := len(reg.Log())
	r = run("re-apply", exitOK, "apply")
	if strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "configured") {
		t.Errorf("re-apply of the same chart wrote something:\n%s", r.stdout)
	}
	for _, req := range reg.Log()[before:] {
		if strings.Contains(req, "/blobs/") || strings.HasPrefix(req, "GET /v2/charts/shop/manifests/") {
			t.Errorf("the re-apply of an unchanged chart downloaded %s", req)
		}
	}
	run("drift", exitOK, "drift")

	push("0.2.0")
	r = run("plan", exitChanges, "plan", "--app", "web")
	if !strings.Contains(r.stdout, `+  version: 0.2.0`) || !strings.Contains(r.stdout, `-  version: 0.1.0`) {
		t.Errorf("plan does not show the version bump:\n%s%s", r.stdout, r.stderr)
	}
	for _, out := range outputs {
		if strings.Contains(out, helmSecret) {
			t.Errorf("an output shows the Secret's value:\n%s", out)
		}
	}
}

// pushTestChart pushes the test chart of helm_test.go (testChartFiles) as
// helm push stores chart shop at version below oci://<reg>/charts, with a
// ConfigMap chart-version naming the version.
func pushTestChart(t *testing.T, reg *ociregistry.Registry, version string) {
	t.Helper()
	chart := map[string]string{}
	for n, b := range flatten(testChartFiles("x")) {
		if rest, ok := strings.CutPrefix(n, "app/"); ok {
			chart[rest] = b
		}
	}
	chart["Chart.yaml"] = "apiVersion: v2\nname: shop\nversion: " + version + "\n"
	chart["templates/version.yaml"] = "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: chart-version\ndata:\n  version: {{ .Chart.Version | quote }}\n"
	if _, err := reg.PushChart("charts/shop", "shop", version, chart); err != nil {
		t.Fatal(err)
	}
}
