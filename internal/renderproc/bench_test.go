package renderproc

import (
	"context"
	"syscall"
	"testing"
	"time"

	"syncd.dev/syncd/internal/planner"
)

// smallKustomization is a small kustomize app: a base and an overlay, a
// Deployment, a Service and a generated ConfigMap.
var smallKustomization = map[string]string{
	"base/kustomization.yaml": "resources: [deploy.yaml, svc.yaml]\n",
	"base/deploy.yaml": "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: web\nspec:\n  replicas: 1\n  selector:\n    matchLabels: {app: web}\n" +
		"  template:\n    metadata:\n      labels: {app: web}\n    spec:\n      containers:\n      - name: web\n        image: nginx:1.27\n",
	"base/svc.yaml":          "apiVersion: v1\nkind: Service\nmetadata:\n  name: web\nspec:\n  selector: {app: web}\n  ports:\n  - port: 80\n",
	"app/kustomization.yaml": "namespace: shop\nnamePrefix: prod-\nresources: [../base]\nconfigMapGenerator:\n- name: settings\n  literals: [LOG_LEVEL=info]\n",
}

// BenchmarkRender compares a render of a small kustomization in process
// (planner.Render) with one in a child process (Renderer.Render): the
// difference is the child's cost.
func BenchmarkRender(b *testing.B) {
	root := writeTree(b, smallKustomization)
	tree := planner.Tree{Root: root, Dir: root + "/app"}
	r := newRenderer(b, Limits{})
	for name, render := range map[string]func(context.Context, planner.Tree) ([]planner.Manifest, error){
		"in-process": planner.Render,
		"child":      r.Render,
	} {
		b.Run(name, func(b *testing.B) {
			before := childCPU(b)
			for b.Loop() {
				ms, err := render(context.Background(), tree)
				if err != nil || len(ms) != 3 {
					b.Fatalf("render: %d manifests, %v", len(ms), err)
				}
			}
			b.ReportMetric(float64((childCPU(b)-before).Milliseconds())/float64(b.N), "child-cpu-ms/op")
		})
	}
}

// childCPU is the CPU time (user and system) of this process's reaped
// children so far.
func childCPU(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_CHILDREN, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
