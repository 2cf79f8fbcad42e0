package install

import (
	"context"
	"encoding/base64"
	"io/fs"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// readDir returns the files below dir (relative to the repository root),
// by slash path, as flux push artifact and helm package would pack them.
func readDir(t *testing.T, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	root := repoPath(dir)
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		b, err := os.ReadFile(p)
		rel, _ := filepath.Rel(root, p)
		out[filepath.ToSlash(rel)] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestExampleOCIRenders pushes examples/app as a flux artifact and
// examples/chart as a Helm chart to an in-memory registry that wants the
// credentials of a Docker config file, points examples/oci.yaml's sources
// at it, and renders both apps through the sources (no cluster).
func TestExampleOCIRenders(t *testing.T) {
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	reg.RequireBasic("ci", "example-pw")
	if _, err := reg.PushFiles("manifests/web", "1.4.0", readDir(t, "examples/app")); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.PushFiles("manifests/web", "2.0.0", map[string]string{"kustomization.yaml": "resources: []\n"}); err != nil {
		t.Fatal(err)
	}
	if _, err := reg.PushChart("charts/web", "web", "0.1.0", readDir(t, "examples/chart")); err != nil {
		t.Fatal(err)
	}
	cfg, err := config.Load(repoPath("examples/oci.yaml"))
	if err != nil {
		t.Fatalf("examples/oci.yaml: %v", err)
	}
	dockerCfg := writeDockerConfig(t, reg.Host, "ci", "example-pw")
	for i, repo := range map[int]string{0: "manifests/web", 1: "charts/web"} {
		cfg.Sources[i].OCI.URL = reg.URL(repo)
		cfg.Sources[i].OCI.Auth.DockerConfigFile = dockerCfg
	}
	runner, err := reconcile.New(cfg, reconcile.Cluster{}, reconcile.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{
		"web":       "apps/Deployment web/web: syncd-web",
		"web-chart": "ConfigMap web-chart/web-settings: syncd-web-chart",
	}
	for _, app := range cfg.Apps {
		rendered, err := runner.Render(context.Background(), app, "")
		if err != nil {
			t.Fatalf("render %s: %v", app.Name, err)
		}
		if shape := planShape(rendered.Plan); !slices.Contains(shape, want[app.Name]) {
			t.Errorf("app %s: plan %v lacks %q", app.Name, shape, want[app.Name])
		}
		if app.Name == "web" && rendered.Revision.Tag != "1.4.0" {
			t.Errorf("app web rendered tag %q, want 1.4.0 (the highest in >=1.0.0 <2.0.0)", rendered.Revision.Tag)
		}
	}
}

// writeDockerConfig writes a Docker config file holding user:password
// for host and returns its name.
func writeDockerConfig(t *testing.T, host, user, password string) string {
	t.Helper()
	file := filepath.Join(t.TempDir(), "config.json")
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	if err := os.WriteFile(file, []byte(`{"auths":{"`+host+`":{"auth":"`+auth+`"}}}`), 0o600); err != nil {
		t.Fatal(err)
	}
	return file
}

// TestExampleHelmOCIRenders pushes examples/chart (0.1.0, and a 0.2.0
// outside the example's range) as helm push does to an in-memory registry
// that wants the credentials of a Docker config file, points
// examples/helmoci.yaml's Helm repository source at it, and renders the
// app through the source (no cluster).
func TestExampleHelmOCIRenders(t *testing.T) {
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	reg.RequireBasic("ci", "example-pw")
	files := readDir(t, "examples/chart")
	for _, v := range []string{"0.1.0", "0.2.0"} {
		files["Chart.yaml"] = strings.Replace(files["Chart.yaml"], "version: 0.1.0", "version: "+v, 1)
		if _, err := reg.PushChart("charts/web", "web", v, files); err != nil {
			t.Fatal(err)
		}
	}
	cfg, err := config.Load(repoPath("examples/helmoci.yaml"))
	if err != nil {
		t.Fatalf("examples/helmoci.yaml: %v", err)
	}
	h := cfg.Sources[0].Helm
	h.URL, h.Auth.DockerConfigFile = "oci://"+reg.Host+"/charts", writeDockerConfig(t, reg.Host, "ci", "example-pw")
	renderExampleChart(t, cfg)
}
