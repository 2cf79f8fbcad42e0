package planner

import (
	"context"
	"net/http"
	"os"
	"path"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"sigs.k8s.io/yaml"
)

// countingRefuser refuses every request and counts them.
type countingRefuser struct{ n *atomic.Int64 }

func (c countingRefuser) RoundTrip(*http.Request) (*http.Response, error) {
	c.n.Add(1)
	return nil, http.ErrNotSupported
}

// FuzzKustomizeChecks feeds arbitrary kustomizations to the safety checks
// and builds what they accept. Neither may panic; an accepted
// kustomization names no remote, absolute or out-of-repository path in
// any field the checks know, and its build sends no HTTP request.
func FuzzKustomizeChecks(f *testing.F) {
	for _, seed := range []string{
		"resources: [../base]\n",
		"resources: [../base, cm.yaml]\nnamespace: x\n",
		"resources: [https://example.invalid/x.yaml]\n",
		"resources: [github.com/org/repo//dir?ref=v1]\n",
		"configMapGenerator:\n- name: c\n  files: [k=cm.yaml, http://127.0.0.1:1/x]\n",
		"configMapGenerator:\n- name: c\n  envs: [../../../etc/passwd]\n",
		"patches:\n- path: /etc/hosts\n",
		"patchesStrategicMerge:\n- |\n  apiVersion: v1\n  kind: ConfigMap\n  metadata: {name: c}\n",
		"openapi:\n  path: https://example.invalid/schema.json\n",
		"components: [../comp]\nreplacements:\n- path: r.yaml\n",
		"helmCharts:\n- name: x\n",
		"generators:\n- |\n  apiVersion: v1\n  kind: ConfigMapGenerator\n  metadata: {name: g, annotations: {config.kubernetes.io/function: 'exec: {path: /bin/sh}'}}\n",
		"resources: [.git/config]\n",
		"crds: [../../outside.json]\n",
	} {
		f.Add([]byte(seed))
	}
	repo := f.TempDir()
	for name, content := range map[string]string{
		"base/kustomization.yaml": "resources: [cm.yaml]\n",
		"base/cm.yaml":            configMap,
		"app/cm.yaml":             configMap,
		"app/r.yaml":              "- source: {kind: ConfigMap, name: cm, fieldPath: data.a}\n  targets: []\n",
		"comp/kustomization.yaml": "apiVersion: kustomize.config.k8s.io/v1alpha1\nkind: Component\n",
	} {
		p := filepath.Join(repo, filepath.FromSlash(name))
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			f.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			f.Fatal(err)
		}
	}
	var requests atomic.Int64
	prev := http.DefaultTransport
	http.DefaultTransport = countingRefuser{&requests}
	f.Cleanup(func() { http.DefaultTransport = prev })

	f.Fuzz(func(t *testing.T, data []byte) {
		if err := os.WriteFile(filepath.Join(repo, "app", "kustomization.yaml"), data, 0o644); err != nil {
			t.Fatal(err)
		}
		fsys, err := openRepoFS(repo, time.Now().Add(10*time.Second))
		if err != nil {
			t.Fatal(err)
		}
		defer fsys.Close()
		dir := path.Join(repoRoot, "app")
		if errs := checkKustomizations(fsys, dir); len(errs) > 0 {
			return
		}
		var k kustomizationDoc
		if err := yaml.Unmarshal(data, &k); err == nil {
			for _, r := range k.refs() {
				if strings.Contains(r.entry, "\n") {
					continue // inline content, not a path
				}
				target := path.Join(dir, r.path)
				if isRemote(r.path) || path.IsAbs(r.path) || (target != repoRoot && !strings.HasPrefix(target, repoRoot+"/")) {
					t.Fatalf("accepted %s %q, which is remote, absolute or outside the repository", r.field, r.entry)
				}
			}
		}
		before := requests.Load()
		_, _ = runBuild(context.Background(), fsys, dir, nil)
		if n := requests.Load() - before; n > 0 {
			t.Fatalf("the build of an accepted kustomization sent %d HTTP request(s)", n)
		}
	})
}
