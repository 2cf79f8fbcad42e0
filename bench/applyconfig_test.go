package bench

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/bench/internal/syncdrun"
)

// BenchmarkApplyConfig runs the real binary, `syncd apply --config`, on
// one app of 10,000 objects of the benchmark mix (BENCH_APPLY_OBJECTS)
// from a file:// Git repository: a first sync, then a no-op, each a
// process of its own as a user or a CronJob runs it. It reports each
// run's time and peak RSS, of syncd itself and, separately, of its render
// child (renders run in a child process, internal/renderproc): the two
// are separate processes and their peaks are at different moments.
// BENCH_APPLY_HEAP_PROFILE=DIR writes a heap profile of each run at its
// largest live heap (the binary is built with -tags syncd_heapprofile)
// to DIR/first_sync.pb.gz and DIR/noop.pb.gz.
func BenchmarkApplyConfig(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	n := 10000
	if v := os.Getenv("BENCH_APPLY_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("BENCH_APPLY_OBJECTS: %v", err)
		}
	}
	dir := b.TempDir()
	bin := filepath.Join(dir, "syncd")
	build := exec.Command("go", "build", "-tags", "syncd_heapprofile", "-o", bin, "./cmd/syncd")
	build.Dir = ".."
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("build: %v\n%s", err, out)
	}
	const ns, invNS = "bench-apply", "bench-apply-inventory"
	cs := kubernetes.NewForConfigOrDie(env.Config)
	for _, name := range []string{ns, invNS} {
		if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: name}}, metav1.CreateOptions{}); err != nil {
			b.Fatal(err)
		}
	}
	repo := writeRepo(b, filepath.Join(dir, "repo"), ns, n)
	config := filepath.Join(dir, "syncd.yaml")
	if err := os.WriteFile(config, fmt.Appendf(nil, `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: bench
    git: {url: "file://%s", branch: main, interval: 5m}
apps:
  - name: bench
    source: bench
    path: objects
    namespace: %s
`, repo, ns), 0o644); err != nil {
		b.Fatal(err)
	}
	profiles := os.Getenv("BENCH_APPLY_HEAP_PROFILE")
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n| `syncd apply --config`, %d objects | time | peak RSS, syncd | of it anonymous | peak RSS, render child |\n|---|---:|---:|---:|---:|\n", n)
	for _, run := range []string{"first_sync", "noop"} {
		cmd := exec.Command(bin, "apply", "--config", config, "--cache-dir", filepath.Join(dir, "cache"), "--concurrency", "16", "--kube-qps", "-1")
		cmd.Env = append(os.Environ(), "KUBECONFIG="+env.Kubeconfig, "POD_NAMESPACE="+invNS, "HOME="+dir)
		if profiles != "" {
			cmd.Env = append(cmd.Env, "SYNCD_HEAP_PROFILE_PEAK="+filepath.Join(profiles, run+".pb.gz"))
		}
		r := runMeasured(b, cmd)
		fmt.Fprintf(&sb, "| %s | %.1f s | %.0f MiB | %.0f MiB | %.0f MiB |\n", run, r.elapsed.Seconds(), mib(r.parentKiB), mib(r.anonKiB), mib(r.childKiB))
		b.ReportMetric(r.elapsed.Seconds(), run+"_s")
		b.ReportMetric(mib(r.parentKiB), run+"_RSS_MiB")
		b.ReportMetric(mib(r.anonKiB), run+"_anon_RSS_MiB")
		b.ReportMetric(mib(r.childKiB), run+"_render_RSS_MiB")
	}
	b.Log(sb.String())
	fmt.Print(sb.String())
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// writeRepo commits n objects of the benchmark mix for namespace ns, as
// 100 multi-document files under objects/, to a new Git repository at dir
// and returns dir.
func writeRepo(b *testing.B, dir, ns string, n int) string {
	b.Helper()
	objs := syncdrun.Objects(ns, n)
	files := 100
	if n < files {
		files = n
	}
	if err := os.MkdirAll(filepath.Join(dir, "objects"), 0o755); err != nil {
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
		if err := os.WriteFile(filepath.Join(dir, "objects", fmt.Sprintf("objects-%03d.yaml", f)), buf, 0o644); err != nil {
			b.Fatal(err)
		}
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

// measured is one run of the binary: its wall time and the peak RSS of
// the process and of the largest of its children, in KiB.
type measured struct {
	elapsed             time.Duration
	parentKiB, childKiB int64
	// anonKiB is the largest anonymous resident set (RssAnon: the Go
	// heap, stacks and runtime; not the binary's pages) sampled of the
	// parent.
	anonKiB int64
}

// runMeasured runs cmd to completion and samples, every 10ms, the
// high-water mark of its resident set (VmHWM) and of each child it has
// started. The parent's is read once more after the run from the kernel's
// accounting (wait4's maxrss is the larger of the process and its reaped
// children, so it is used only when no child was bigger).
func runMeasured(b *testing.B, cmd *exec.Cmd) measured {
	b.Helper()
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	start := time.Now()
	if err := cmd.Start(); err != nil {
		b.Fatal(err)
	}
	var mu sync.Mutex
	var m measured
	done := make(chan struct{})
	go func() {
		pid := cmd.Process.Pid
		for {
			select {
			case <-done:
				return
			case <-time.After(10 * time.Millisecond):
			}
			p, anon := vmHWM(pid), procStatus(pid, "RssAnon:")
			var c int64
			for _, child := range childPIDs(pid) {
				c = max(c, vmHWM(child))
			}
			mu.Lock()
			m.parentKiB, m.childKiB, m.anonKiB = max(m.parentKiB, p), max(m.childKiB, c), max(m.anonKiB, anon)
			mu.Unlock()
		}
	}()
	err := cmd.Wait()
	close(done)
	m.elapsed = time.Since(start)
	if err != nil {
		b.Fatalf("%v: %v\n%s", cmd.Args, err, tail(out.String(), 4000))
	}
	mu.Lock()
	defer mu.Unlock()
	if ru, ok := cmd.ProcessState.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > m.childKiB {
		m.parentKiB = max(m.parentKiB, ru.Maxrss)
	}
	return m
}

// vmHWM returns the peak resident set of process pid in KiB (0 if it is
// gone).
func vmHWM(pid int) int64 { return procStatus(pid, "VmHWM:") }

// procStatus returns the field (a size in KiB) of /proc/PID/status, 0 if
// the process is gone.
func procStatus(pid int, field string) int64 {
	status, err := os.ReadFile(fmt.Sprintf("/proc/%d/status", pid))
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, field); ok {
			kib, _ := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
			return kib
		}
	}
	return 0
}

// childPIDs returns the children of process pid, over all its threads.
func childPIDs(pid int) []int {
	tasks, _ := filepath.Glob(fmt.Sprintf("/proc/%d/task/*/children", pid))
	var out []int
	for _, t := range tasks {
		b, err := os.ReadFile(t)
		if err != nil {
			continue
		}
		for _, f := range strings.Fields(string(b)) {
			if p, err := strconv.Atoi(f); err == nil {
				out = append(out, p)
			}
		}
	}
	return out
}

func tail(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[len(s)-n:]
}
