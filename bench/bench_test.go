// Package bench compares syncd's apply with kubectl apply --server-side,
// Flux's ssa.ResourceManager and a raw concurrent SSA client on the
// project's control plane. It is its own module so that syncd never
// depends on Flux. Run from this directory:
//
//	go test -run '^$' -bench . -benchtime 1x -timeout 60m .
package bench

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fluxcd/cli-utils/pkg/kstatus/polling"
	"github.com/fluxcd/pkg/ssa"
	"github.com/go-logr/logr"
	"golang.org/x/sync/errgroup"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/controller-runtime/pkg/client"
	ctrllog "sigs.k8s.io/controller-runtime/pkg/log"

	"syncd.dev/syncd/bench/internal/syncdrun"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) {
	ctrllog.SetLogger(logr.Discard())
	testenv.Main(m, testenv.Options{}, &env)
}

const (
	objects     = 2000
	pruned      = 500
	concurrency = 16
	fluxConc    = 4
)

// counter counts the requests one client sends.
type counter struct{ n atomic.Int64 }

func (c *counter) wrap(rt http.RoundTripper) http.RoundTripper {
	return rtFunc(func(r *http.Request) (*http.Response, error) {
		c.n.Add(1)
		return rt.RoundTrip(r)
	})
}

type rtFunc func(*http.Request) (*http.Response, error)

func (f rtFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }

// tool syncs a full object set into its namespace; objects missing from
// the set since the last call are pruned.
type tool interface {
	sync(ctx context.Context, objs []*unstructured.Unstructured) error
	requests() int64
	close()
}

type result struct {
	d    time.Duration
	reqs int64
}

var scenarios = []string{"first sync", "no-op", "one change", "prune 500"}

// run runs the four scenarios with one tool in a fresh namespace.
func run(b *testing.B, name string, mk func(ns string) tool) []result {
	cs := kubernetes.NewForConfigOrDie(env.Config)
	ns := "bench-" + name
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	t := mk(ns)
	defer t.close()
	all := syncdrun.Objects(ns, objects)
	changed := make([]*unstructured.Unstructured, len(all))
	copy(changed, all)
	c := all[0].DeepCopy()
	_ = unstructured.SetNestedField(c.Object, "changed", "data", "payload")
	changed[0] = c
	sets := [][]*unstructured.Unstructured{all, all, changed, changed[:objects-pruned]}
	var out []result
	for i, set := range sets {
		before := t.requests()
		start := time.Now()
		if err := t.sync(context.Background(), set); err != nil {
			b.Fatalf("%s %s: %v", name, scenarios[i], err)
		}
		out = append(out, result{d: time.Since(start), reqs: t.requests() - before})
	}
	// Check the end state: exactly the 1,500 objects remain.
	n := 0
	for _, list := range []func() (int, error){
		func() (int, error) {
			l, err := cs.CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				return 0, err
			}
			n := 0
			for _, cm := range l.Items {
				if cm.Name != "kube-root-ca.crt" {
					n++
				}
			}
			return n, nil
		},
		func() (int, error) {
			l, err := cs.AppsV1().Deployments(ns).List(context.Background(), metav1.ListOptions{})
			return len(l.Items), err
		},
		func() (int, error) {
			l, err := cs.CoreV1().Services(ns).List(context.Background(), metav1.ListOptions{})
			return len(l.Items), err
		},
	} {
		k, err := list()
		if err != nil {
			b.Fatal(err)
		}
		n += k
	}
	if n != objects-pruned {
		b.Errorf("%s: %d objects remain after the prune, want %d", name, n, objects-pruned)
	}
	return out
}

func restConfig(c *counter) *rest.Config {
	cfg := rest.CopyConfig(env.Config)
	cfg.QPS, cfg.Burst = -1, 0
	cfg.WrapTransport = c.wrap
	return cfg
}

// syncdTool is syncd: planner, inventory (watch cache, skip, prune) and
// applier at concurrency 16.
type syncdTool struct {
	c counter
	s *syncdrun.Syncd
}

func newSyncd(b *testing.B, ns string) tool {
	return newSyncdApp(b, config.App{Name: "bench", Namespace: ns, AppSpec: config.AppSpec{PruneBudget: ptr(25)}})
}

// newSyncdNoValidate is syncd with the stage validation off (an app's
// validate: false), to measure what the validating dry runs cost.
func newSyncdNoValidate(b *testing.B, ns string) tool {
	return newSyncdApp(b, config.App{Name: "bench", Namespace: ns, AppSpec: config.AppSpec{PruneBudget: ptr(25), Validate: ptr(false)}})
}

func newSyncdApp(b *testing.B, app config.App) tool {
	t := &syncdTool{}
	s, err := syncdrun.New(restConfig(&t.c), app, concurrency)
	if err != nil {
		b.Fatal(err)
	}
	t.s = s
	return t
}

func ptr[T any](v T) *T { return &v }

func (t *syncdTool) sync(ctx context.Context, objs []*unstructured.Unstructured) error {
	_, rep, err := t.s.Sync(ctx, objs)
	if err == nil && rep != nil && rep.Refused != nil {
		err = fmt.Errorf("prune refused: %s", rep.Refused.Message)
	}
	return err
}
func (t *syncdTool) requests() int64 { return t.c.n.Load() }
func (t *syncdTool) close()          { t.s.Stop() }

// rawTool sends one SSA PATCH per object at concurrency 16, and one
// DELETE per removed object: no reads, no inventory. The ceiling.
//
// With dryRunFirst it is the ceiling of a tool that validates: it
// dry-runs every object of a sync first (a PATCH with dryRun=All, as
// syncd's validation sends it) and applies none unless the server
// accepted them all, then applies them as the plain ceiling does.
type rawTool struct {
	c           counter
	dyn         dynamic.Interface
	rm          *restmapper.DeferredDiscoveryRESTMapper
	last        []*unstructured.Unstructured
	dryRunFirst bool
}

func newRaw(b *testing.B, ns string) tool {
	t := &rawTool{}
	cfg := restConfig(&t.c)
	t.dyn = dynamic.NewForConfigOrDie(cfg)
	t.rm = restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(discovery.NewDiscoveryClientForConfigOrDie(cfg)))
	return t
}

func (t *rawTool) ri(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	m, err := t.rm.RESTMapping(o.GroupVersionKind().GroupKind(), o.GroupVersionKind().Version)
	if err != nil {
		return nil, err
	}
	return t.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
}

func (t *rawTool) sync(ctx context.Context, objs []*unstructured.Unstructured) error {
	if t.dryRunFirst {
		if err := t.dryRun(ctx, objs); err != nil {
			return err
		}
	}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	keep := map[string]bool{}
	for _, o := range objs {
		keep[o.GetKind()+"/"+o.GetName()] = true
		g.Go(func() error { return t.apply(gctx, o, metav1.PatchOptions{FieldManager: "raw", Force: ptr(true)}) })
	}
	for _, o := range t.last {
		if keep[o.GetKind()+"/"+o.GetName()] {
			continue
		}
		g.Go(func() error {
			ri, err := t.ri(o)
			if err != nil {
				return err
			}
			return ri.Delete(gctx, o.GetName(), metav1.DeleteOptions{})
		})
	}
	t.last = objs
	return g.Wait()
}

// dryRun sends the dry run of every object, at concurrency 16, with the
// options of syncd's validation (force, fieldValidation=Ignore).
func (t *rawTool) dryRun(ctx context.Context, objs []*unstructured.Unstructured) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(concurrency)
	opts := metav1.PatchOptions{FieldManager: "raw", Force: ptr(true), DryRun: []string{metav1.DryRunAll}, FieldValidation: metav1.FieldValidationIgnore}
	for _, o := range objs {
		g.Go(func() error { return t.apply(gctx, o, opts) })
	}
	if err := g.Wait(); err != nil {
		return fmt.Errorf("dry run: %w", err)
	}
	return nil
}

// apply sends one apply of o with opts.
func (t *rawTool) apply(ctx context.Context, o *unstructured.Unstructured, opts metav1.PatchOptions) error {
	ri, err := t.ri(o)
	if err != nil {
		return err
	}
	data, err := json.Marshal(o.Object)
	if err != nil {
		return err
	}
	_, err = ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, opts)
	return err
}

func (t *rawTool) requests() int64 { return t.c.n.Load() }
func (t *rawTool) close()          {}

// fluxTool is Flux's ssa.ResourceManager.ApplyAllStaged (concurrency 4,
// as kustomize-controller runs it), pruning with DeleteAll of the objects
// that left the set (Flux's own inventory diff is not timed).
type fluxTool struct {
	c    counter
	rm   *ssa.ResourceManager
	last []*unstructured.Unstructured
}

func newFlux(b *testing.B, ns string) tool {
	t := &fluxTool{}
	cfg := restConfig(&t.c)
	cl, err := client.New(cfg, client.Options{})
	if err != nil {
		b.Fatal(err)
	}
	poller := polling.NewStatusPoller(cl, cl.RESTMapper(), polling.Options{})
	t.rm = ssa.NewResourceManager(cl, poller, ssa.Owner{Field: "flux-bench", Group: "bench.fluxcd.io"})
	t.rm.SetConcurrency(fluxConc)
	return t
}

func (t *fluxTool) sync(ctx context.Context, objs []*unstructured.Unstructured) error {
	in := make([]*unstructured.Unstructured, len(objs))
	keep := map[string]bool{}
	for i, o := range objs {
		in[i] = o.DeepCopy()
		keep[o.GetKind()+"/"+o.GetName()] = true
	}
	if _, err := t.rm.ApplyAllStaged(ctx, in, ssa.DefaultApplyOptions()); err != nil {
		return err
	}
	var gone []*unstructured.Unstructured
	for _, o := range t.last {
		if !keep[o.GetKind()+"/"+o.GetName()] {
			gone = append(gone, o.DeepCopy())
		}
	}
	if len(gone) > 0 {
		if _, err := t.rm.DeleteAll(ctx, gone, ssa.DeleteOptions{PropagationPolicy: metav1.DeletePropagationBackground}); err != nil {
			return err
		}
	}
	t.last = objs
	return nil
}
func (t *fluxTool) requests() int64 { return t.c.n.Load() }
func (t *fluxTool) close()          {}

// kubectlTool runs kubectl apply --server-side --prune --applyset (the
// control plane's kubectl); requests are counted from the API server's
// apiserver_request_total.
type kubectlTool struct {
	b   *testing.B
	ns  string
	dir string
	n   int64
}

func newKubectl(b *testing.B, ns string) tool {
	return &kubectlTool{b: b, ns: ns, dir: b.TempDir()}
}

func (t *kubectlTool) sync(ctx context.Context, objs []*unstructured.Unstructured) error {
	var buf bytes.Buffer
	for _, o := range objs {
		j, err := json.Marshal(o.Object)
		if err != nil {
			return err
		}
		buf.Write(j)
		buf.WriteString("\n")
	}
	path := filepath.Join(t.dir, "objects.json")
	if err := os.WriteFile(path, buf.Bytes(), 0o600); err != nil {
		return err
	}
	before, err := serverRequests()
	if err != nil {
		return err
	}
	cmd := exec.CommandContext(ctx, filepath.Join(env.BinDir, "kubectl"), "--kubeconfig", env.Kubeconfig, "apply", "--server-side",
		"--field-manager=kubectl-bench", "--prune", "--applyset=secret/kubectl-bench", "-n", t.ns, "-f", path)
	cmd.Env = append(os.Environ(), "KUBECTL_APPLYSET=true")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("kubectl: %w: %s", err, stderr.String())
	}
	after, err := serverRequests()
	if err != nil {
		return err
	}
	t.n += after - before - 1 // the /metrics scrape itself
	return nil
}
func (t *kubectlTool) requests() int64 { return t.n }
func (t *kubectlTool) close()          {}

// serverOwn are the resources only the API server itself writes in these
// runs: a Service's cluster IP (one IPAddress each) and the API server's
// identity lease. They are left out of a tool's request count.
var serverOwn = regexp.MustCompile(`resource="(ipaddresses|leases)"`)

// serverRequests sums apiserver_request_total, the requests of the tools
// that run as processes of their own (kubectl, syncd's binary), without
// the API server's own requests (serverOwn) and the metrics scrapes.
func serverRequests() (int64, error) {
	body, err := kubernetes.NewForConfigOrDie(env.Config).Discovery().RESTClient().Get().AbsPath("/metrics").DoRaw(context.Background())
	if err != nil {
		return 0, err
	}
	var n int64
	for _, line := range strings.Split(string(body), "\n") {
		if !strings.HasPrefix(line, "apiserver_request_total{") || serverOwn.MatchString(line) || strings.Contains(line, `subresource="/metrics"`) {
			continue
		}
		v, err := strconv.ParseInt(line[strings.LastIndexByte(line, ' ')+1:], 10, 64)
		if err != nil {
			return 0, fmt.Errorf("apiserver_request_total line %q: %w", line, err)
		}
		n += v
	}
	return n, nil
}

// BenchmarkCompare runs every tool through the four scenarios once and
// prints the table with syncd's ratios.
func BenchmarkCompare(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	tools := []struct {
		name string
		mk   func(*testing.B, string) tool
	}{
		{"syncd", newSyncd},
		{"syncd-novalidate", newSyncdNoValidate},
		{"raw", newRaw},
		{"kubectl", newKubectl},
		{"flux", newFlux},
	}
	if only := os.Getenv("BENCH_TOOLS"); only != "" {
		var keep = tools[:0]
		for _, t := range tools {
			if strings.Contains(only, t.name) {
				keep = append(keep, t)
			}
		}
		tools = keep
	}
	res := map[string][]result{}
	for _, tl := range tools {
		res[tl.name] = run(b, tl.name, func(ns string) tool { return tl.mk(b, ns) })
		for i, r := range res[tl.name] {
			b.ReportMetric(r.d.Seconds(), tl.name+"_"+strings.ReplaceAll(scenarios[i], " ", "_")+"_s")
		}
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n%d objects (70%% ConfigMaps, 20%% Deployments, 10%% Services), concurrency %d (Flux %d)\n", objects, concurrency, fluxConc)
	fmt.Fprintf(&sb, "%-12s", "scenario")
	for _, tl := range tools {
		fmt.Fprintf(&sb, " | %-18s", tl.name)
	}
	fmt.Fprintf(&sb, " | syncd vs others (x faster)\n")
	for i, sc := range scenarios {
		fmt.Fprintf(&sb, "%-12s", sc)
		for _, tl := range tools {
			r := res[tl.name][i]
			fmt.Fprintf(&sb, " | %6.2fs %6d req", r.d.Seconds(), r.reqs)
		}
		if s, ok := res["syncd"]; ok {
			var ratios []string
			for _, tl := range tools {
				if tl.name != "syncd" {
					ratios = append(ratios, fmt.Sprintf("%s %.2f", tl.name, res[tl.name][i].d.Seconds()/s[i].d.Seconds()))
				}
			}
			fmt.Fprintf(&sb, " | %s", strings.Join(ratios, ", "))
		}
		sb.WriteString("\n")
	}
	b.Log(sb.String())
	fmt.Print(sb.String())
}

// BenchmarkMemory runs syncd's pipeline on 10,000 objects of the benchmark
// mix (BENCH_RSS_OBJECTS) in a separate process, with the app's drift
// watcher on as in the daemon, and reports its peak RSS.
func BenchmarkMemory(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	bin := filepath.Join(b.TempDir(), "rss")
	if out, err := exec.Command("go", "build", "-o", bin, "./cmd/rss").CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "bench-rss"}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	start := time.Now()
	n := "10000"
	if v := os.Getenv("BENCH_RSS_OBJECTS"); v != "" {
		n = v
	}
	args := []string{"--kubeconfig", env.Kubeconfig, "--namespace", "bench-rss", "--n", n}
	if p := os.Getenv("BENCH_MEMPROFILE"); p != "" {
		args = append(args, "--memprofile", p)
	}
	if p := os.Getenv("BENCH_MEMPROFILE_END"); p != "" {
		args = append(args, "--memprofile-end", p)
	}
	if p := os.Getenv("BENCH_MEMPROFILE_PEAK"); p != "" {
		args = append(args, "--memprofile-peak", p)
	}
	if os.Getenv("BENCH_NO_DRIFT") != "" {
		args = append(args, "--drift=false")
	}
	if os.Getenv("BENCH_CACHED_MAPPER") != "" {
		args = append(args, "--cached-mapper")
	}
	if p := os.Getenv("BENCH_CPUPROFILE"); p != "" {
		args = append(args, "--cpuprofile", p)
	}
	out, err := exec.Command(bin, args...).CombinedOutput()
	if err != nil {
		b.Fatalf("rss: %v\n%s", err, out)
	}
	f := rssFigures(b, out)
	mib := float64(f["maxrss_kib"]) / 1024
	b.ReportMetric(mib, "peak_RSS_MiB")
	b.ReportMetric(float64(f["first_sync_ms"])/1000, "first_sync_s")
	b.ReportMetric(float64(f["noop_ms"])/1000, "noop_s")
	b.ReportMetric(float64(f["drift_ms"])/1000, "drift_seen_s")
	msg := fmt.Sprintf("peak RSS managing %s objects of the benchmark mix (first sync %d ms + no-op %d ms + drift watch, one edit seen in %d ms; %s): %.0f MiB\n",
		n, f["first_sync_ms"], f["noop_ms"], f["drift_ms"], time.Since(start).Round(time.Second), mib)
	b.Log(msg)
	fmt.Print(msg)
}
