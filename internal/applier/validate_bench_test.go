package applier

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/planner"
)

// benchObjects is the size of the validation benchmark's app: 70 %
// ConfigMaps, 20 % Deployments, 10 % Services, as in docs/performance.md.
const benchObjects = 1000

// benchDocs returns the benchmark app's documents; changed is the data
// value of the first ConfigMap.
func benchDocs(changed string) []string {
	var docs []string
	for i := range benchObjects {
		switch {
		case i < benchObjects*7/10:
			v := "v"
			if i == 0 {
				v = changed
			}
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cm-%04d\ndata:\n  k: %q\n", i, v))
		case i < benchObjects*9/10:
			docs = append(docs, deployment(fmt.Sprintf("web-%04d", i), 0, "nginx:1.27"))
		default:
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: Service\nmetadata:\n  name: svc-%04d\nspec:\n  ports:\n  - port: 80\n", i))
		}
	}
	return docs
}

// requestCounter counts every request a client sends.
type requestCounter struct {
	next http.RoundTripper
	n    atomic.Int64
}

func (r *requestCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	r.n.Add(1)
	return r.next.RoundTrip(req)
}

// benchApplier is an applier at concurrency 16 (as syncd's benchmarks run
// it) with a client that counts requests, and a planner for one app.
type benchApplier struct {
	a       *Applier
	dyn     dynamic.Interface
	counter *requestCounter
	mapper  *restmapper.DeferredDiscoveryRESTMapper
}

// benchCache stands in for the daemon's watch cache: every object but the
// changed ConfigMap is exactly as syncd left it (no request), the changed
// one is read.
type benchCache struct {
	dyn     dynamic.Interface
	changed string
}

func (c benchCache) Unchanged(_ context.Context, obj *planner.Object) (string, bool) {
	return "1", obj.Ref.Name != c.changed
}

func (c benchCache) Live(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error) {
	return c.dyn.Resource(configMaps).Namespace(ref.Namespace).Get(ctx, ref.Name, metav1.GetOptions{})
}

func newBenchApplier(b *testing.B) *benchApplier {
	b.Helper()
	counter := &requestCounter{}
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		b.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		b.Fatal(err)
	}
	mapper := restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	a, err := New(dyn, mapper, Options{Concurrency: 16})
	if err != nil {
		b.Fatal(err)
	}
	return &benchApplier{a: a, dyn: dyn, counter: counter, mapper: mapper}
}

func (ba *benchApplier) plan(b *testing.B, ns string, docs []string) *planner.Plan {
	b.Helper()
	p, err := planner.New(plannerApp(b, appOf("bench", ns)), planner.Options{Mapper: ba.mapper, Revision: "bench"})
	if err != nil {
		b.Fatal(err)
	}
	ms := make([]planner.Manifest, len(docs))
	for i, d := range docs {
		j, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			b.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			b.Fatal(err)
		}
		ms[i] = planner.Manifest{File: "bench.yaml", Index: i + 1, Object: u}
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		b.Fatal(err)
	}
	return plan
}

// apply applies plan and fails the benchmark unless every slice applied.
func (ba *benchApplier) apply(b *testing.B, plan *planner.Plan, ao ApplyOptions) {
	b.Helper()
	cs, err := ba.a.Apply(context.Background(), plan, ao)
	if err != nil {
		b.Fatal(err)
	}
	if !cs.OK() {
		b.Fatalf("apply not OK: %d failed, %d conflicts", len(cs.Failures()), len(cs.Conflicts()))
	}
}

// BenchmarkValidation measures what the stage dry runs add: a first sync
// of benchObjects objects (every object is dry-run once more before its
// stage is written) and a one-object change (the other objects skipped as
// unchanged from a stand-in for the watch cache, as the daemon's
// inventory skips them, so one dry run), each with and
// without validation. It reports requests per operation; the ratios are
// in docs/performance.md. Run with
//
//	go test -run '^$' -bench Validation -benchtime 3x ./internal/applier/
func BenchmarkValidation(b *testing.B) {
	for _, scenario := range []string{"first sync", "one change"} {
		for _, validate := range []bool{true, false} {
			b.Run(fmt.Sprintf("%s/validate=%v", scenario, validate), func(b *testing.B) {
				ao := ApplyOptions{RecordManagers: true, SkipValidation: !validate}
				ba := newBenchApplier(b)
				var requests int64
				for i := range b.N {
					b.StopTimer()
					ns := env.Namespace(b)
					first := ba.plan(b, ns, benchDocs("v"))
					if scenario == "one change" {
						ba.apply(b, first, ao)
					}
					plan := first
					run := ao
					if scenario == "one change" {
						plan = ba.plan(b, ns, benchDocs(fmt.Sprint("changed-", i)))
						run.Live = benchCache{dyn: ba.dyn, changed: "cm-0000"}
						run.Skip = func(*planner.Object, *unstructured.Unstructured) bool { return false }
					}
					before := ba.counter.n.Load()
					b.StartTimer()
					ba.apply(b, plan, run)
					b.StopTimer()
					requests += ba.counter.n.Load() - before
				}
				b.ReportMetric(float64(requests)/float64(b.N), "req/op")
			})
		}
	}
}
