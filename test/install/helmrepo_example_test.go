package install

import (
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv/helmserver"
)

// TestExampleHelmRepoRenders packages examples/chart (twice: 0.1.0 and
// 0.2.0, outside the example's range), serves it from a loopback Helm
// repository that wants basic auth, points examples/helmrepo.yaml's
// source at it, and renders the app through the source (no cluster).
func TestExampleHelmRepoRenders(t *testing.T) {
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	files := readDir(t, "examples/chart")
	delete(files, "Chart.yaml")
	for _, v := range []string{"0.1.0", "0.2.0"} {
		if _, err := srv.Publish(helmserver.Chart{Name: "web", Version: v, Files: files}); err != nil {
			t.Fatal(err)
		}
	}
	srv.RequireAuth("Basic " + base64.StdEncoding.EncodeToString([]byte("ci:example-pw")))
	cfg, err := config.Load(repoPath("examples/helmrepo.yaml"))
	if err != nil {
		t.Fatalf("examples/helmrepo.yaml: %v", err)
	}
	pw := filepath.Join(t.TempDir(), "password")
	if err := os.WriteFile(pw, []byte("example-pw\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	h := cfg.Sources[0].Helm
	h.URL, h.Auth.PasswordFile, h.Auth.CAFile = srv.URL, pw, ""
	runner := renderExampleChart(t, cfg)
	// web-packaged reads values-prod.yaml from the chart package.
	packaged, err := runner.Render(context.Background(), cfg.Apps[1], "")
	if err != nil {
		t.Fatalf("render %s: %v", cfg.Apps[1].Name, err)
	}
	greeting := ""
	for _, o := range packaged.Plan.Objects {
		if o.Ref.Name == "web-settings" {
			greeting, _, _ = unstructured.NestedString(o.Desired.Object, "data", "greeting")
		}
	}
	if greeting != "hello from prod" {
		t.Errorf("%s: greeting %q, want the package's values-prod.yaml's", cfg.Apps[1].Name, greeting)
	}
}

// renderExampleChart renders the first app of cfg, the example chart
// web from a Helm repository source whose range is 0.1.x, through the
// source (no cluster), checks that 0.1.0 rendered its ConfigMap, and
// returns the runner for more renders.
func renderExampleChart(t *testing.T, cfg *config.Config) *reconcile.Runner {
	t.Helper()
	runner, err := reconcile.New(cfg, reconcile.Cluster{}, reconcile.Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	rendered, err := runner.Render(context.Background(), cfg.Apps[0], "")
	if err != nil {
		t.Fatalf("render: %v", err)
	}
	if shape, want := planShape(rendered.Plan), "ConfigMap web-chart/web-settings: syncd-web-chart"; !slices.Contains(shape, want) {
		t.Errorf("plan %v lacks %q", shape, want)
	}
	if !strings.HasPrefix(rendered.Plan.Revision, "web-0.1.0@sha256:") {
		t.Errorf("revision %q, want web-0.1.0 (the highest in 0.1.x)", rendered.Plan.Revision)
	}
	return runner
}
