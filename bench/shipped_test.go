package bench

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/bench/internal/syncdrun"
)

// shippedScenarios are BenchmarkShipped's syncs, in order: every object
// created, the same set again, one ConfigMap's data changed.
var shippedScenarios = []string{"first sync", "no-op", "one change"}

// shippedTool is one tool of BenchmarkShipped: prepare makes a set of
// objects the one the next sync applies (untimed: for syncd, a commit to
// its Git repository), sync applies it (timed), requests counts what the
// tool sent so far.
type shippedTool interface {
	prepare(objs []*unstructured.Unstructured) error
	sync(ctx context.Context) error
	requests() (int64, error)
}

// libraryTool runs one of BenchmarkCompare's Go tools (raw, Flux).
type libraryTool struct {
	t    tool
	objs []*unstructured.Unstructured
}

func (l *libraryTool) prepare(objs []*unstructured.Unstructured) error { l.objs = objs; return nil }
func (l *libraryTool) sync(ctx context.Context) error                  { return l.t.sync(ctx, l.objs) }
func (l *libraryTool) requests() (int64, error)                        { return l.t.requests(), nil }

// binaryTool is syncd as shipped: the binary hack/build.sh builds,
// `syncd apply --config` of one app whose objects are committed to a
// file:// Git repository, a process per sync. Its requests are the API
// server's count (apiserver_request_total) less the API server's own.
type binaryTool struct {
	b      *testing.B
	bin    string
	dir    string
	config string
	invNS  string
	commit int
}

// newBinaryTool makes the repository and config of one app in ns, with
// validation on or off.
func newBinaryTool(b *testing.B, bin, ns, invNS string, validate bool) *binaryTool {
	dir := b.TempDir()
	t := &binaryTool{b: b, bin: bin, dir: dir, config: filepath.Join(dir, "syncd.yaml"), invNS: invNS}
	repo := filepath.Join(dir, "repo")
	t.git("init", "-q", "-b", "main", repo)
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: bench
    git: {url: "file://%s", branch: main, interval: 5m}
apps:
  - name: bench
    source: bench
    path: objects
    namespace: %s
    validate: %t
`, repo, ns, validate)
	if err := os.WriteFile(t.config, []byte(cfg), 0o644); err != nil {
		b.Fatal(err)
	}
	return t
}

// git runs git in the tool's repository (or with its own -C).
func (t *binaryTool) git(args ...string) {
	t.b.Helper()
	if args[0] != "init" {
		args = append([]string{"-C", filepath.Join(t.dir, "repo")}, args...)
	}
	if out, err := exec.Command("git", args...).CombinedOutput(); err != nil {
		t.b.Fatalf("git %v: %v\n%s", args, err, out)
	}
}

// prepare commits objs as 100 multi-document files under objects/.
func (t *binaryTool) prepare(objs []*unstructured.Unstructured) error {
	writeTree(t.b, filepath.Join(t.dir, "repo", "objects"), objs)
	t.commit++
	t.git("add", ".")
	t.git("-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "--allow-empty", "-m", fmt.Sprintf("set %d", t.commit))
	return nil
}

// sync runs `syncd apply --config` once, at the applier concurrency of
// the other tools, with client-side rate limiting off like theirs.
func (t *binaryTool) sync(ctx context.Context) error {
	cmd := exec.CommandContext(ctx, t.bin, "apply", "--config", t.config, "--cache-dir", filepath.Join(t.dir, "cache"), "--concurrency", strconv.Itoa(concurrency), "--kube-qps", "-1", "-q")
	cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "POD_NAMESPACE="+t.invNS, "HOME="+t.dir)
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("syncd apply: %v\n%s", err, tail(string(out), 2000))
	}
	return nil
}

func (t *binaryTool) requests() (int64, error) { return serverRequests() }

// BenchmarkShipped compares syncd as shipped (the binary, `syncd apply
// --config` from a file:// repository, with validation on, the default,
// and off) with raw SSA, raw SSA that dry-runs every object first (the
// ceiling of a tool that validates) and Flux on the benchmark mix (2,000
// objects; BENCH_SHIPPED_OBJECTS), in BENCH_ROUNDS rounds (default 5, one
// per tool) of first sync, no-op and one change, each tool in fresh
// namespaces per round, emptied after its round, in an order that
// rotates each round, after an untimed warm-up sync of each tool
// (shippedWarmUp). It prints each round's table and ratios, and the first
// sync's ratios summed over the run: #32's "in one run" figures.
func BenchmarkShipped(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	names := []string{"syncd", "syncd-novalidate", "raw", "raw-dryrun", "flux"}
	n, rounds := envInt(b, "BENCH_SHIPPED_OBJECTS", objects), envInt(b, "BENCH_ROUNDS", len(names))
	bin := filepath.Join(b.TempDir(), "syncd")
	build := exec.Command("bash", "hack/build.sh", bin)
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	shippedWarmUp(b, bin, names, n)
	var sb strings.Builder
	var all []map[string][]result
	for r := 1; r <= rounds; r++ {
		res, order := map[string][]result{}, shippedOrder(names, r)
		for _, name := range order {
			ns := fmt.Sprintf("shipped-%s-%d", name, r)
			createNamespaces(b, ns, ns+"-inventory")
			res[name] = shippedRun(b, name, newShippedTool(b, name, bin, ns), syncdrun.Objects(ns, n))
			emptyNamespaces(b, ns, ns+"-inventory")
		}
		shippedTable(&sb, n, r, names, res)
		fmt.Fprintf(&sb, "order this round: %s\n", strings.Join(order, ", "))
		all = append(all, res)
	}
	shippedTotals(&sb, all)
	b.Log(sb.String())
	fmt.Print(sb.String())
}

// newShippedTool returns the tool name of BenchmarkShipped, applying to
// namespace ns (syncd's inventory in ns-inventory).
func newShippedTool(b *testing.B, name, bin, ns string) shippedTool {
	switch name {
	case "syncd":
		return newBinaryTool(b, bin, ns, ns+"-inventory", true)
	case "syncd-novalidate":
		return newBinaryTool(b, bin, ns, ns+"-inventory", false)
	case "raw":
		return &libraryTool{t: newRaw(b, ns)}
	case "raw-dryrun":
		raw := newRaw(b, ns).(*rawTool)
		raw.dryRunFirst = true
		return &libraryTool{t: raw}
	case "flux":
		return &libraryTool{t: newFlux(b, ns)}
	}
	b.Fatalf("no tool %q", name)
	return nil
}

// shippedWarmUp runs one first sync of each tool, untimed, before the
// first round: a run's first sync otherwise meets a control plane that
// has served nothing yet and, for syncd, a binary never run, and the
// rotation gives that place (round 1's first) to the same tool every
// run (docs/performance.md).
func shippedWarmUp(b *testing.B, bin string, names []string, n int) {
	for _, name := range names {
		ns := "shipped-" + name + "-warmup"
		createNamespaces(b, ns, ns+"-inventory")
		t := newShippedTool(b, name, bin, ns)
		if err := t.prepare(syncdrun.Objects(ns, n)); err != nil {
			b.Fatalf("%s warm-up: %v", name, err)
		}
		if err := t.sync(context.Background()); err != nil {
			b.Fatalf("%s warm-up: %v", name, err)
		}
		emptyNamespaces(b, ns, ns+"-inventory")
	}
}

// shippedTotals writes the first sync's ratios over every round of the
// run: each tool's times summed, so that each tool ran in every place of
// the order once (BENCH_ROUNDS a multiple of the tools) and no round's
// neighbours decide the figure.
func shippedTotals(sb *strings.Builder, rounds []map[string][]result) {
	sum := func(name string, i int) float64 {
		var s float64
		for _, res := range rounds {
			s += res[name][i].d.Seconds()
		}
		return s
	}
	fmt.Fprintf(sb, "\nall %d rounds, first sync summed: syncd %.2f× raw, raw-dryrun %.2f× raw, syncd %.2f× raw-dryrun, syncd-novalidate %.2f× raw, Flux %.2f× syncd; no-op summed: Flux %.1f× syncd\n",
		len(rounds), sum("syncd", 0)/sum("raw", 0), sum("raw-dryrun", 0)/sum("raw", 0), sum("syncd", 0)/sum("raw-dryrun", 0), sum("syncd-novalidate", 0)/sum("raw", 0), sum("flux", 0)/sum("syncd", 0), sum("flux", 1)/sum("syncd", 1))
}

// shippedOrder is the order the tools run in round r: rotated by one
// each round, so that no tool always runs first or last in a round, next
// to the same neighbours.
func shippedOrder(names []string, r int) []string {
	k := (r - 1) % len(names)
	return append(slices.Clone(names[k:]), names[:k]...)
}

// emptyNamespaces deletes what a tool's round left in its namespaces (the
// benchmark mix and the inventory's Secrets), so that each tool meets the
// same objects in the cluster wherever it runs: before, a tool met the
// objects of every tool that ran before it (the last tool of a fourth
// round met 30,000), which the API server holds in its watch cache and
// collects with its heap.
func emptyNamespaces(b *testing.B, names ...string) {
	b.Helper()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	for _, ns := range names {
		for _, gvr := range benchResources {
			if err := dyn.Resource(gvr).Namespace(ns).DeleteCollection(context.Background(), metav1.DeleteOptions{}, metav1.ListOptions{}); err != nil {
				b.Fatalf("empty %s of %s: %v", ns, gvr.Resource, err)
			}
		}
	}
}

// benchResources are the resources the benchmark mix and the inventory
// create objects of.
var benchResources = []schema.GroupVersionResource{
	{Version: "v1", Resource: "configmaps"},
	{Version: "v1", Resource: "services"},
	{Version: "v1", Resource: "secrets"},
	{Group: "apps", Version: "v1", Resource: "deployments"},
}

// shippedRun runs the scenarios with one tool and returns each one's time
// and requests.
func shippedRun(b *testing.B, name string, t shippedTool, all []*unstructured.Unstructured) []result {
	changed := make([]*unstructured.Unstructured, len(all))
	copy(changed, all)
	c := all[0].DeepCopy()
	_ = unstructured.SetNestedField(c.Object, "changed", "data", "payload")
	changed[0] = c
	var out []result
	for i, set := range [][]*unstructured.Unstructured{all, all, changed} {
		if err := t.prepare(set); err != nil {
			b.Fatalf("%s %s: %v", name, shippedScenarios[i], err)
		}
		before, err := t.requests()
		if err != nil {
			b.Fatal(err)
		}
		start := time.Now()
		if err := t.sync(context.Background()); err != nil {
			b.Fatalf("%s %s: %v", name, shippedScenarios[i], err)
		}
		d := time.Since(start)
		after, err := t.requests()
		if err != nil {
			b.Fatal(err)
		}
		out = append(out, result{d: d, reqs: after - before})
	}
	return out
}

// shippedTable writes one round's table and ratios.
func shippedTable(sb *strings.Builder, n, round int, names []string, res map[string][]result) {
	fmt.Fprintf(sb, "\nround %d: %d objects (70%% ConfigMaps, 20%% Deployments, 10%% Services), concurrency %d (Flux %d)\n", round, n, concurrency, fluxConc)
	fmt.Fprintf(sb, "| scenario | %s |\n|---|%s\n", strings.Join(names, " | "), strings.Repeat("---:|", len(names)))
	for i, sc := range shippedScenarios {
		cells := make([]string, len(names))
		for j, name := range names {
			r := res[name][i]
			cells[j] = fmt.Sprintf("%.2f s, %d req", r.d.Seconds(), r.reqs)
		}
		fmt.Fprintf(sb, "| %s | %s |\n", sc, strings.Join(cells, " | "))
	}
	ratio := func(a, b string, i int) float64 { return res[a][i].d.Seconds() / res[b][i].d.Seconds() }
	fmt.Fprintf(sb, "first sync: syncd %.2f× raw, raw-dryrun %.2f× raw, syncd-novalidate %.2f× raw, Flux %.2f× syncd; no-op: Flux %.1f× syncd; one change: Flux %.1f× syncd\n",
		ratio("syncd", "raw", 0), ratio("raw-dryrun", "raw", 0), ratio("syncd-novalidate", "raw", 0), ratio("flux", "syncd", 0), ratio("flux", "syncd", 1), ratio("flux", "syncd", 2))
}
