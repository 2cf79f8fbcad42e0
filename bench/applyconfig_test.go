package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/bench/internal/syncdrun"
)

// BenchmarkApplyConfig runs the real binary as it ships (buildSyncd),
// `syncd apply --config`, on one app of 10,000 objects of the benchmark
// mix (BENCH_APPLY_OBJECTS) from a file:// Git repository: a first sync,
// then a no-op, each a process of its own as a user or a CronJob runs
// it. It reports each run's time and peak RSS, of syncd itself and,
// separately, of its render child (renders run in a child process,
// internal/renderproc): the two are separate processes and their peaks
// are at different moments. BENCH_APPLY_HEAP_PROFILE=DIR writes a heap
// profile of each run at its largest live heap to DIR/first_sync.pb.gz
// and DIR/noop.pb.gz. With BENCH_CGROUP_LIMIT each run is a process in a
// memory cgroup of that limit (newMemCgroup), and the table says what the
// cgroup recorded; a run the limit ended is reported, not a failure.
func BenchmarkApplyConfig(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	n := envInt(b, "BENCH_APPLY_OBJECTS", 10000)
	bin := buildSyncd(b)
	dir := b.TempDir()
	const ns, invNS = "bench-apply", "bench-apply-inventory"
	createNamespaces(b, ns, invNS)
	repo := writeRepo(b, filepath.Join(dir, "repo"), []repoTree{{path: "objects", ns: ns, n: n}})
	config := filepath.Join(dir, "syncd.yaml")
	writeConfig(b, config, repo, 5*time.Minute, []repoTree{{path: "objects", ns: ns, n: n}})
	profiles := os.Getenv("BENCH_APPLY_HEAP_PROFILE")
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| `syncd apply --config`, %d objects | time | peak RSS, syncd | of it anonymous | peak RSS, render child (anonymous) | memory cgroup |\n|---|---:|---:|---:|---:|---|\n", n)
	for _, run := range []string{"first_sync", "noop"} {
		cmd := exec.Command(bin, "apply", "--config", config, "--cache-dir", filepath.Join(dir, "cache"), "--concurrency", "16", "--kube-qps", "-1")
		cmd.Env = syncdEnv("KUBECONFIG="+env.Kubeconfig, "POD_NAMESPACE="+invNS, "HOME="+dir)
		if profiles != "" {
			cmd.Env = append(cmd.Env, "SYNCD_HEAP_PROFILE_PEAK="+filepath.Join(profiles, run+".pb.gz"))
		}
		cg := newMemCgroup(b, "apply-"+run)
		if cg != nil {
			cg.wrap(b, cmd)
		}
		r, out := runMeasured(b, cmd, cg)
		cgroup, stopped := cgroupOutcome(b, cg, cmd, r, out)
		fmt.Fprintf(&sb, "| %s | %.1f s | %.0f MiB | %.0f MiB | %.0f MiB (%.0f MiB) | %s |\n", run, r.elapsed.Seconds(), mib(r.parentKiB), mib(r.anonKiB), mib(r.childKiB), mib(r.childAnonKiB), cgroup)
		b.ReportMetric(r.elapsed.Seconds(), run+"_s")
		b.ReportMetric(mib(r.parentKiB), run+"_RSS_MiB")
		b.ReportMetric(mib(r.anonKiB), run+"_anon_RSS_MiB")
		b.ReportMetric(mib(r.childKiB), run+"_render_RSS_MiB")
		if stopped {
			break
		}
	}
	b.Log(sb.String())
	fmt.Print(sb.String())
}

// cgroupOutcome checks how a run of cmd ended and returns what its
// memory cgroup cg recorded, as the tables show it ("" without one), and
// whether the run failed. A failed run fails the benchmark, except in a
// memory cgroup, where ending a run is what a limit does: the kernel's
// account of it is printed (on stdout: a benchmark's log is cut to ten
// lines) and the benchmark goes on to its table.
func cgroupOutcome(b *testing.B, cg *memCgroup, cmd *exec.Cmd, r measured, out string) (string, bool) {
	b.Helper()
	if cg == nil {
		if r.err != nil {
			b.Fatalf("%v: %v\n%s", cmd.Args, r.err, tail(out, 4000))
		}
		return "", false
	}
	res, err := cg.result()
	if err != nil {
		b.Fatal(err)
	}
	s := res.String()
	if why := res.describe(r.state.Pid(), r); why != "" {
		fmt.Print(why)
	}
	if r.err != nil {
		fmt.Printf("%v: %v in the memory cgroup\n%s\n", cmd.Args, r.err, tail(out, 4000))
		s += fmt.Sprintf("; ended: %v", r.state)
	}
	fmt.Printf("peak working set of the cgroup (usage less inactive file pages): %.0f MiB\n", mib(r.workingSetKiB))
	return s, r.err != nil
}

// createNamespaces creates the namespaces names.
func createNamespaces(b *testing.B, names ...string) {
	b.Helper()
	cs := kubernetes.NewForConfigOrDie(env.Config)
	for _, name := range names {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
}

// repoTree is one directory of a benchmark repository: n objects of the
// benchmark mix for namespace ns, an app's path.
type repoTree struct {
	path, ns string
	n        int
}

// writeConfig writes a syncd.yaml at path with one Git source, the
// repository repo polled every interval, and one app per tree (named
// after its namespace).
func writeConfig(b *testing.B, path, repo string, interval time.Duration, trees []repoTree) {
	b.Helper()
	var sb strings.Builder
	fmt.Fprintf(&sb, "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n  - name: bench\n    git: {url: \"file://%s\", branch: main, interval: %s}\napps:\n", repo, interval)
	for _, t := range trees {
		fmt.Fprintf(&sb, "  - name: %s\n    source: bench\n    path: %s\n    namespace: %s\n", appName(t), t.path, t.ns)
	}
	if err := os.WriteFile(path, []byte(sb.String()), 0o644); err != nil {
		b.Fatal(err)
	}
}

// appName is the name of the app of tree t in writeConfig's config: "bench"
// for the tree of BenchmarkApplyConfig (its inventory keeps that name),
// else its namespace.
func appName(t repoTree) string {
	if t.path == "objects" {
		return "bench"
	}
	return t.ns
}

// writeRepo commits the objects of trees, each as at most 100
// multi-document files under its path, to a new Git repository at dir and
// returns dir.
func writeRepo(b *testing.B, dir string, trees []repoTree) string {
	b.Helper()
	for _, t := range trees {
		writeTree(b, filepath.Join(dir, t.path), syncdrun.Objects(t.ns, t.n))
	}
	for _, args := range [][]string{
		{"init", "-q", "-b", "main"},
		{"add", "."},
		{"-c", "user.name=bench", "-c", "user.email=bench@example.invalid", "commit", "-q", "-m", "objects"},
	} {
		c := exec.Command("git", args...)
		c.Dir = dir
		if out, err := c.CombinedOutput(); err != nil {
			b.Fatalf("git %v: %v\n%s", args, err, out)
		}
	}
	return dir
}

// writeTree writes objs as at most 100 multi-document files in dir.
func writeTree(b *testing.B, dir string, objs []*unstructured.Unstructured) {
	b.Helper()
	n := len(objs)
	files := min(100, n)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		b.Fatal(err)
	}
	per := (n + files - 1) / files
	for f := 0; f*per < n; f++ {
		var buf []byte
		for _, o := range objs[f*per : min(n, (f+1)*per)] {
			j, err := json.Marshal(o.Object)
			if err != nil {
				b.Fatal(err)
			}
			buf = append(append(append(buf, "---\n"...), j...), '\n')
		}
		if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("objects-%03d.yaml", f)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
	}
}
