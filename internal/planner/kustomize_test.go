package planner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// summary is one rendered object as the layout tests compare it: where it
// came from and what it is.
func summary(ms []Manifest) []string {
	var out []string
	for _, m := range ms {
		o := m.Object
		name := o.GetName()
		if ns := o.GetNamespace(); ns != "" {
			name = ns + "/" + name
		}
		out = append(out, fmt.Sprintf("%s %s %s", m.File, o.GetKind(), name))
	}
	return out
}

// fieldOf returns one field of the object of kind and name, "" when it is
// missing.
func fieldOf(ms []Manifest, kind, name string, path ...string) string {
	for _, m := range ms {
		if m.Object.GetKind() == kind && m.Object.GetName() == name {
			v, ok, _ := unstructured.NestedFieldNoCopy(m.Object.Object, path...)
			if ok {
				return fmt.Sprint(v)
			}
		}
	}
	return ""
}

type fieldWant struct {
	kind, name string
	path       []string
	want       string
}

// TestRenderRepositoryLayouts builds the fixtures in testdata/repos, shaped
// like public kustomize repositories: overlays two levels below their
// base, a component, a patch shared from a sibling directory, an app next
// to other apps taking its CRD from elsewhere in the repository.
func TestRenderRepositoryLayouts(t *testing.T) {
	tests := map[string]struct {
		repo, app string
		want      []string
		fields    []fieldWant
	}{
		"staging overlay of ../../base with a patch from ../common": {
			repo: "layered", app: "overlays/staging",
			want: []string{
				"base/deployment.yaml Deployment tea-staging/tea",
				"base/service.yaml Service tea-staging/tea",
				"base/kustomization.yaml ConfigMap tea-staging/tea-settings-khkkcffc7m",
			},
			fields: []fieldWant{
				{"Deployment", "tea", []string{"spec", "template", "spec", "containers"}, "[map[image:registry.example.com/tea:1.4.0 name:tea ports:[map[containerPort:8080]] resources:map[requests:map[cpu:100m memory:64Mi]] volumeMounts:[map[mountPath:/etc/tea name:settings readOnly:false]]]]"},
				{"Deployment", "tea", []string{"spec", "replicas"}, "1"},
				{"ConfigMap", "tea-settings-khkkcffc7m", []string{"data", "brew.conf"}, "steep=4m\n"},
			},
		},
		"production overlay with a component": {
			repo: "layered", app: "overlays/production",
			want: []string{
				"base/deployment.yaml Deployment tea-production/tea",
				"base/service.yaml Service tea-production/tea",
				"base/kustomization.yaml ConfigMap tea-production/tea-settings-khkkcffc7m",
				"overlays/production/namespace.yaml Namespace tea-production",
				"components/metrics/service-monitor.yaml Service tea-production/tea-metrics",
			},
			fields: []fieldWant{
				{"Deployment", "tea", []string{"spec", "replicas"}, "3"},
				{"Deployment", "tea", []string{"metadata", "annotations", "metrics.example.com/scrape"}, "true"},
				{"Service", "tea-metrics", []string{"metadata", "labels", "app.kubernetes.io/name"}, ""},
			},
		},
		"the base alone": {
			repo: "layered", app: "base",
			want: []string{
				"base/deployment.yaml Deployment tea",
				"base/service.yaml Service tea",
				"base/kustomization.yaml ConfigMap tea-settings-khkkcffc7m",
			},
		},
		"kustomized app next to other apps, CRD from ../../platform": {
			repo: "monorepo", app: "apps/shop",
			want: []string{
				"platform/crds/queue-crd.yaml CustomResourceDefinition queues.queues.example.com",
				"apps/shop/queue.yaml Queue shop/orders",
			},
		},
		"plain app of the same repository reads only its directory": {
			repo: "monorepo", app: "apps/blog",
			want: []string{"configmap.yaml ConfigMap blog/blog"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := filepath.Join("testdata", "repos", tc.repo)
			ms, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, tc.app)})
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(ms)); diff != "" {
				t.Errorf("objects (-want +got):\n%s", diff)
			}
			for _, f := range tc.fields {
				if got := fieldOf(ms, f.kind, f.name, f.path...); got != f.want {
					t.Errorf("%s %s .%s = %q, want %q", f.kind, f.name, strings.Join(f.path, "."), got, f.want)
				}
			}
		})
	}
}

// TestLocalTree checks how a --path run finds what a build may read: the
// enclosing Git repository, or the directory itself outside one.
func TestLocalTree(t *testing.T) {
	repo := t.TempDir()
	if err := os.MkdirAll(filepath.Join(repo, ".git"), 0o755); err != nil {
		t.Fatal(err)
	}
	worktree := t.TempDir() // a worktree or submodule has a .git file
	if err := os.WriteFile(filepath.Join(worktree, ".git"), []byte("gitdir: /elsewhere\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	plain := t.TempDir()
	for _, d := range []string{filepath.Join(repo, "overlays", "prod"), filepath.Join(worktree, "app"), filepath.Join(plain, "app")} {
		if err := os.MkdirAll(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	resolve := func(p string) string {
		r, err := filepath.EvalSymlinks(p)
		if err != nil {
			t.Fatal(err)
		}
		return r
	}
	tests := map[string]struct {
		dir  string
		want Tree
	}{
		"overlay in a repository": {filepath.Join(repo, "overlays", "prod"), Tree{Root: resolve(repo), Dir: resolve(filepath.Join(repo, "overlays", "prod"))}},
		"the repository root":     {repo, Tree{Root: resolve(repo), Dir: resolve(repo)}},
		"worktree (.git file)":    {filepath.Join(worktree, "app"), Tree{Root: resolve(worktree), Dir: resolve(filepath.Join(worktree, "app"))}},
		"not in a repository":     {filepath.Join(plain, "app"), Tree{Root: resolve(filepath.Join(plain, "app")), Dir: resolve(filepath.Join(plain, "app"))}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := LocalTree(tc.dir)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("LocalTree(%s) (-want +got):\n%s", tc.dir, diff)
			}
		})
	}
}

// TestRenderMissingDir: an app directory that does not exist is named in
// the error (it once read ": read manifests: lstat …", the path lost to
// the failed symlink resolution).
func TestRenderMissingDir(t *testing.T) {
	root := t.TempDir()
	missing := filepath.Join(root, "apps", "gone")
	_, err := Render(context.Background(), Tree{Root: root, Dir: missing})
	if err == nil || !strings.HasPrefix(err.Error(), missing+": read manifests: ") {
		t.Errorf("Render of a missing directory: error %v, want it to start with %q", err, missing+": read manifests: ")
	}
}
