package planner

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/config"
)

// writeBenchTree writes n objects (half Deployments with two containers,
// half ConfigMaps) into 20 multi-document files.
func writeBenchTree(b *testing.B, n int) string {
	b.Helper()
	dir := b.TempDir()
	files := make([]strings.Builder, 20)
	for i := 0; i < n; i++ {
		w := &files[i%len(files)]
		if i%2 == 0 {
			fmt.Fprintf(w, `---
apiVersion: apps/v1
kind: Deployment
metadata: {name: web-%d, labels: {app: web-%d, tier: frontend}}
spec:
  replicas: 2
  selector: {matchLabels: {app: web-%d}}
  template:
    metadata: {labels: {app: web-%d}}
    spec:
      containers:
      - name: app
        image: example.com/web:%d
        args: ["--port=8080"]
        ports: [{containerPort: 8080}]
        resources: {limits: {memory: 128Mi}, requests: {cpu: 100m}}
        env: [{name: A, value: "1"}, {name: B, value: "2"}]
      - name: proxy
        image: example.com/proxy:3
`, i, i, i, i, i)
		} else {
			fmt.Fprintf(w, "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm-%d}\ndata: {a: \"1\", b: \"2\", c: \"3\"}\n", i)
		}
	}
	for i := range files {
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("f%02d.yaml", i)), []byte(files[i].String()), 0o644); err != nil {
			b.Fatal(err)
		}
	}
	return dir
}

// BenchmarkRenderAndSplit measures Render + Plan of 2,000 objects with one
// split rule (images to a release manager).
func BenchmarkRenderAndSplit(b *testing.B) {
	dir := writeBenchTree(b, 2000)
	app := config.App{
		Name: "web", Namespace: "bench",
		AppSpec: config.AppSpec{
			Split: []config.SplitRule{
				{Manager: "syncd-web-release", Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.template.spec.containers[*].image"}},
			},
		},
	}
	b.ReportAllocs()
	for b.Loop() {
		ms, err := Render(context.Background(), Tree{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		p, err := newFromConfig(app, Options{})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := p.Plan(context.Background(), ms)
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.Objects) != 2000 {
			b.Fatalf("planned %d objects", len(plan.Objects))
		}
	}
}

// BenchmarkRenderAndSplitSubstituted is BenchmarkRenderAndSplit with a
// substitution configured (every object marshalled, substituted and read
// again; the objects use no variable, so the cost is the substitution's
// own). Compare the two for what substitution adds per object.
func BenchmarkRenderAndSplitSubstituted(b *testing.B) {
	dir := writeBenchTree(b, 2000)
	app := config.App{
		Name: "web", Namespace: "bench",
		AppSpec: config.AppSpec{
			Split: []config.SplitRule{
				{Manager: "syncd-web-release", Kinds: []string{"apps/Deployment"}, Paths: []string{".spec.template.spec.containers[*].image"}},
			},
		},
	}
	subst := &Substitution{Variables: map[string]Variable{"CLUSTER": {Value: "prod", Source: "substitute"}}}
	b.ReportAllocs()
	for b.Loop() {
		ms, err := Render(context.Background(), Tree{Dir: dir})
		if err != nil {
			b.Fatal(err)
		}
		p, err := newFromConfig(app, Options{Substitution: subst})
		if err != nil {
			b.Fatal(err)
		}
		plan, err := p.Plan(context.Background(), ms)
		if err != nil {
			b.Fatal(err)
		}
		if len(plan.Objects) != 2000 {
			b.Fatalf("planned %d objects", len(plan.Objects))
		}
	}
}
