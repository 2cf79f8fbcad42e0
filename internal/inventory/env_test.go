package inventory

import (
	"context"
	"fmt"
	"net/http"
	"sort"
	"strings"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/yaml"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

// TestMain runs the package against one control plane with the
// controller-manager's garbage collector and namespace controller, which
// finish what a prune starts (dependents of a deleted object, the contents
// of a deleted Namespace). No other controller runs: the request-count
// tests need objects nothing writes behind syncd's back (the Deployment
// controller's status writes would move resourceVersions at moments the
// test cannot control).
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{
		ControllerManager: true,
		Controllers:       []string{"garbage-collector-controller", "namespace-controller"},
	}, &env)
}

// counter counts the requests a client sends, by kind, while on.
type counter struct {
	on                     atomic.Bool
	total, writes, dryRuns atomic.Int64
	mu                     sync.Mutex
	lines                  []string
	// onRequest, when set, sees every request before it is sent.
	onRequest func(*http.Request)
}

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return roundTripper(func(req *http.Request) (*http.Response, error) {
		if c.onRequest != nil {
			c.onRequest(req)
		}
		if c.on.Load() {
			c.total.Add(1)
			if req.Method != http.MethodGet {
				c.writes.Add(1)
			}
			if strings.Contains(req.URL.RawQuery, "dryRun") {
				c.dryRuns.Add(1)
			}
			c.mu.Lock()
			c.lines = append(c.lines, req.Method+" "+req.URL.Path+"?"+req.URL.RawQuery)
			c.mu.Unlock()
		}
		return rt.RoundTrip(req)
	})
}

func (c *counter) reset() {
	c.total.Store(0)
	c.writes.Store(0)
	c.dryRuns.Store(0)
	c.mu.Lock()
	c.lines = nil
	c.mu.Unlock()
}

type roundTripper func(*http.Request) (*http.Response, error)

func (f roundTripper) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// fixture is one test's clients, inventory manager and app.
type fixture struct {
	t       *testing.T
	ns      string
	dyn     dynamic.Interface
	md      metadata.Interface
	mapper  *restmapper.DeferredDiscoveryRESTMapper
	reg     *prometheus.Registry
	m       *Manager
	count   *counter
	app     config.App
	applier *applier.Applier
}

func newFixture(t *testing.T, app config.App, opts Options) *fixture {
	t.Helper()
	f := &fixture{t: t, ns: env.Namespace(t), count: &counter{}, reg: prometheus.NewRegistry()}
	cfg := rest.CopyConfig(env.Config)
	cfg.WrapTransport = f.count.wrap
	var err error
	if f.dyn, err = dynamic.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	if f.md, err = metadata.NewForConfig(cfg); err != nil {
		t.Fatal(err)
	}
	disc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	f.mapper = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(disc))
	if opts.Namespace == "" {
		// Not f.ns: the inventory namespace is syncd's own, which no
		// app object shares.
		opts.Namespace = env.Namespace(t)
	}
	opts.Registerer = f.reg
	if f.m, err = New(f.dyn, f.md, f.mapper, opts); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(f.m.Stop)
	if app.Name == "" {
		app.Name = "web"
	}
	app.Namespace = f.ns
	f.app = app
	if f.applier, err = applier.New(f.dyn, f.mapper, applier.Options{Concurrency: 8}); err != nil {
		t.Fatal(err)
	}
	return f
}

// plan plans docs for the fixture's app.
func (f *fixture) plan(docs ...string) *planner.Plan {
	f.t.Helper()
	p, err := planner.New(plannerApp(f.t, f.app), planner.Options{Mapper: f.mapper, Revision: "test"})
	if err != nil {
		f.t.Fatal(err)
	}
	var ms []planner.Manifest
	for i, d := range docs {
		j, err := yaml.YAMLToJSON([]byte(d))
		if err != nil {
			f.t.Fatal(err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(j); err != nil {
			f.t.Fatal(err)
		}
		ms = append(ms, planner.Manifest{File: "test.yaml", Index: i + 1, Object: u})
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		f.t.Fatalf("plan: %v", err)
	}
	return plan
}

// sync runs one reconcile (Begin, apply, Finish) as the daemon does.
func (f *fixture) sync(ctx context.Context, plan *planner.Plan) (*applier.ChangeSet, *Report, error) {
	f.t.Helper()
	run, err := f.m.Begin(ctx, invApp(f.app), plan, false)
	if err != nil {
		return nil, nil, err
	}
	// The app's conflicts default, as reconcile compiles it (rules are
	// not used here).
	policy, err := applier.NewPolicy(applier.PolicySpec{Default: applier.ConflictAction(f.app.Conflicts.Default)})
	if err != nil {
		f.t.Fatal(err)
	}
	ao := run.Hooks(applier.ApplyOptions{Policy: policy, RecordManagers: true})
	cs, err := f.applier.Apply(ctx, plan, ao)
	rep, ferr := run.Finish(ctx, cs, err)
	if err == nil {
		err = ferr
	}
	return cs, rep, err
}

// mustSync runs sync and fails on an error or an apply that is not OK.
func (f *fixture) mustSync(plan *planner.Plan) *Report {
	f.t.Helper()
	cs, rep, err := f.sync(context.Background(), plan)
	if err != nil {
		f.t.Fatalf("sync: %v", err)
	}
	if !cs.OK() {
		for _, c := range cs.Changes {
			if c.Err != nil {
				f.t.Errorf("%s: %v", c.Object, c.Err)
			}
		}
		f.t.Fatalf("apply not OK")
	}
	return rep
}

func (f *fixture) cm(name string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {k: %s}\n", name, name)
}

func (f *fixture) cms(names ...string) []string {
	out := make([]string, len(names))
	for i, n := range names {
		out[i] = f.cm(n)
	}
	return out
}

var configMaps = schema.GroupVersionResource{Version: "v1", Resource: "configmaps"}

// exists reports whether the object is present (and not being deleted).
func (f *fixture) exists(gvr schema.GroupVersionResource, ns, name string) bool {
	f.t.Helper()
	ri := f.dyn.Resource(gvr)
	var u *unstructured.Unstructured
	var err error
	if ns == "" {
		u, err = ri.Get(context.Background(), name, metav1.GetOptions{})
	} else {
		u, err = ri.Namespace(ns).Get(context.Background(), name, metav1.GetOptions{})
	}
	return err == nil && u.GetDeletionTimestamp() == nil
}

// presentCMs lists the fixture namespace's ConfigMaps (sorted names).
func (f *fixture) presentCMs() []string {
	f.t.Helper()
	l, err := f.dyn.Resource(configMaps).Namespace(f.ns).List(context.Background(), metav1.ListOptions{})
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, u := range l.Items {
		if u.GetName() == "kube-root-ca.crt" {
			continue
		}
		out = append(out, u.GetName())
	}
	sort.Strings(out)
	return out
}

// members returns the inventory's member names (sorted).
func (f *fixture) members() []string {
	f.t.Helper()
	inv, err := f.m.Load(context.Background(), f.app.Name)
	if err != nil {
		f.t.Fatal(err)
	}
	var out []string
	for _, m := range inv.Members {
		out = append(out, m.Name)
	}
	sort.Strings(out)
	return out
}

func (f *fixture) blocked(reason Reason) float64 {
	return testutil.ToFloat64(f.m.metrics.blocked.WithLabelValues(string(reason)))
}

func names(refs []planner.ObjectRef) []string {
	var out []string
	for _, r := range refs {
		out = append(out, r.Name)
	}
	sort.Strings(out)
	return out
}

// SharedEnv returns the package's control plane to the external tests.
func SharedEnv() *testenv.Env { return env }
