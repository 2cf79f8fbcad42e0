package importer

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

var update = flag.Bool("update", false, "rewrite the golden files of TestImport")

// TestImport imports each case's files and compares what syncd import
// would print, the objects or syncd.yaml and then the warnings, with
// the golden file testdata/golden/<case>.golden. A syncd.yaml printed
// must pass the file config's validation.
func TestImport(t *testing.T) {
	for name, tc := range map[string]struct {
		tool      Tool
		paths     []string
		namespace string
		config    bool
	}{
		"flux-gitrepository-refs":   {tool: Flux, paths: []string{"cases/flux-gitrepository-refs.yaml"}},
		"flux-kustomization":        {tool: Flux, paths: []string{"cases/flux-kustomization.yaml"}},
		"flux-helm":                 {tool: Flux, paths: []string{"cases/flux-helm.yaml"}},
		"flux-helm-config":          {tool: Flux, paths: []string{"cases/flux-helm.yaml"}, namespace: "apps", config: true},
		"flux-unreadable":           {tool: Flux, paths: []string{"cases/not-yaml.yaml", "cases/chart"}},
		"flux-fleet-production":     {tool: Flux, paths: []string{"fleet/clusters/production", "fleet/infrastructure", "fleet/apps"}},
		"flux-fleet-staging-config": {tool: Flux, paths: []string{"fleet/clusters/staging", "fleet/infrastructure", "fleet/apps"}, config: true},
		"flux-fleet-whole-repo":     {tool: Flux, paths: []string{"fleet"}, namespace: "fleet"},
		"argocd-guestbook":          {tool: ArgoCD, paths: []string{"argocd/apps/guestbook.yaml"}},
		"argocd-helm":               {tool: ArgoCD, paths: []string{"argocd/apps/helm-guestbook.yaml"}},
		"argocd-sources":            {tool: ArgoCD, paths: []string{"argocd/apps/shop.yaml"}, namespace: "shop"},
		"argocd-config":             {tool: ArgoCD, paths: []string{"argocd"}, config: true},
	} {
		t.Run(name, func(t *testing.T) {
			got := importOutput(t, tc.tool, tc.paths, tc.namespace, tc.config)
			golden := filepath.Join("testdata", "golden", name+".golden")
			if *update {
				if err := os.WriteFile(golden, []byte(got), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run with -update to write it)", err)
			}
			if diff := cmp.Diff(string(want), got); diff != "" {
				t.Errorf("syncd import %s %s (-want +got):\n%s", tc.tool, tc.paths, diff)
			}
		})
	}
}

// importOutput is what syncd import prints: the objects (or the
// syncd.yaml, validated), then "# warnings:" and one line each.
func importOutput(t *testing.T, tool Tool, paths []string, ns string, asConfig bool) string {
	t.Helper()
	for i, p := range paths {
		paths[i] = filepath.ToSlash(filepath.Join("testdata", p))
	}
	docs, warnings, err := Read(paths, nil)
	if err != nil {
		t.Fatal(err)
	}
	opts := Options{Namespace: ns}
	if asConfig {
		opts.Form = ConfigForm
	}
	res := Import(tool, docs, opts)
	warnings = append(warnings, res.Warnings...)
	var out bytes.Buffer
	if asConfig {
		cfg, more := res.Config()
		warnings = append(warnings, more...)
		if err := WriteConfig(&out, cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Parse(out.Bytes(), "syncd.yaml"); err != nil {
			t.Errorf("the syncd.yaml printed is not valid: %v\n%s", err, out.String())
		}
	} else if err := res.WriteObjects(&out); err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	b.WriteString(out.String())
	b.WriteString("# warnings:\n")
	for _, w := range warnings {
		b.WriteString("# " + w.String() + "\n")
	}
	return b.String()
}
