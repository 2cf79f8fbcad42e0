package bench

import (
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"
)

// buildSyncd builds syncd as it ships, with hack/build.sh (the
// Dockerfile's line: CGO_ENABLED=0, -trimpath, -ldflags "-s -w"), into a
// temporary directory and returns its path. The binary's own pages are
// part of its resident set, so a cgo build with symbols measures about
// 40 MiB more than the product. BENCH_BUILD_TAGS sets the build tags
// (GOFLAGS=-tags=...): default syncd_heapprofile, which only adds the
// SYNCD_HEAP_PROFILE_PEAK hook (cmd/syncd/heapprofile.go); "none" builds
// the product binary exactly.
func buildSyncd(b *testing.B) string {
	b.Helper()
	tags := "syncd_heapprofile"
	if v, ok := os.LookupEnv("BENCH_BUILD_TAGS"); ok {
		tags = v
	}
	bin := filepath.Join(b.TempDir(), "syncd")
	build := exec.Command("bash", "hack/build.sh", bin)
	build.Dir = ".."
	build.Env = os.Environ()
	if tags != "none" && tags != "" {
		build.Env = append(build.Env, strings.TrimSpace("GOFLAGS="+os.Getenv("GOFLAGS")+" -tags="+tags))
	}
	if out, err := build.CombinedOutput(); err != nil {
		b.Fatalf("hack/build.sh: %v\n%s", err, out)
	}
	b.Logf("syncd built with hack/build.sh, build tags %q", tags)
	return bin
}

// syncdEnv is the environment of a measured syncd process: the
// benchmark's, then vars, then the space-separated NAME=VALUE pairs of
// BENCH_SYNCD_ENV (GOMEMLIMIT=176MiB, GOGC=50: settings tried on syncd
// alone, not on the control plane the benchmark starts).
func syncdEnv(vars ...string) []string {
	return append(append(os.Environ(), vars...), strings.Fields(os.Getenv("BENCH_SYNCD_ENV"))...)
}

// envInt is the integer in environment variable name, or def when it is
// unset.
func envInt(b *testing.B, name string, def int) int {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	n, err := strconv.Atoi(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return n
}

// envDuration is the duration in environment variable name, or def when
// it is unset.
func envDuration(b *testing.B, name string, def time.Duration) time.Duration {
	b.Helper()
	v := os.Getenv(name)
	if v == "" {
		return def
	}
	d, err := time.ParseDuration(v)
	if err != nil {
		b.Fatalf("%s: %v", name, err)
	}
	return d
}

func mib(kib int64) float64 { return float64(kib) / 1024 }

// measured is one run of the binary: its wall time, the peak RSS of the
// process and of the largest of its children, in KiB, and how it ended.
type measured struct {
	elapsed             time.Duration
	parentKiB, childKiB int64
	// anonKiB is the largest anonymous resident set (RssAnon: the Go
	// heap, stacks and runtime; not the binary's pages) sampled of the
	// parent.
	anonKiB int64
	// childAnonKiB is the largest anonymous resident set sampled of a
	// render child: what it adds to syncd's own (the binary's pages are
	// shared).
	childAnonKiB int64
	// children are the process ids of the children seen (render
	// children), to name the one an out-of-memory kill took.
	children map[int]bool
	// err is how the process ended (nil: exit 0); state is its state.
	err   error
	state *os.ProcessState
	// workingSetKiB is the largest working set sampled of the run's
	// memory cgroup (usage less inactive file pages, as the kubelet
	// counts it); 0 without one.
	workingSetKiB int64
}

// measuredRun is a process being run whose memory is sampled every 10ms:
// the high-water mark of its resident set (VmHWM), its anonymous resident
// set, each of its render children's high-water mark and, with a cgroup, the
// cgroup's working set.
type measuredRun struct {
	cmd   *exec.Cmd
	cg    *memCgroup
	start time.Time
	// ended is closed when the process has ended and been reaped, with
	// its error in waitErr.
	ended   chan struct{}
	waitErr error
	end     time.Time
	// forkedAtKiB is the benchmark process's own peak RSS when it
	// started cmd: Linux records the peak of the memory a process leaves
	// at exec into the new program's (exec_mmap), and Go starts commands
	// with CLONE_VM, so that memory is the benchmark's. wait4's maxrss of
	// cmd is never below it, whatever cmd itself used.
	forkedAtKiB int64

	mu sync.Mutex
	m  measured
}

// startMeasured starts cmd, with its output to out, and samples its
// memory until it ends. cg, when not nil, is the memory cgroup cmd runs
// in (memCgroup.wrap).
func startMeasured(cmd *exec.Cmd, out io.Writer, cg *memCgroup) (*measuredRun, error) {
	cmd.Stdout, cmd.Stderr = out, out
	r := &measuredRun{cmd: cmd, cg: cg, start: time.Now(), ended: make(chan struct{}), m: measured{children: map[int]bool{}}, forkedAtKiB: vmHWM(os.Getpid())}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go r.sample()
	go func() {
		r.waitErr = cmd.Wait()
		r.end = time.Now()
		close(r.ended)
	}()
	return r, nil
}

// sample reads the process's figures every 10ms until it ends.
func (r *measuredRun) sample() {
	pid := r.cmd.Process.Pid
	for {
		select {
		case <-r.ended:
			return
		case <-time.After(10 * time.Millisecond):
		}
		p, anon := vmHWM(pid), procStatus(pid, "RssAnon:")
		var c, cAnon int64
		children := renderChildren(pid)
		for _, child := range children {
			c, cAnon = max(c, vmHWM(child)), max(cAnon, procStatus(child, "RssAnon:"))
		}
		var ws int64
		if r.cg != nil {
			ws = r.cg.workingSetKiB()
		}
		r.mu.Lock()
		r.m.parentKiB, r.m.childKiB, r.m.anonKiB = max(r.m.parentKiB, p), max(r.m.childKiB, c), max(r.m.anonKiB, anon)
		r.m.workingSetKiB, r.m.childAnonKiB = max(r.m.workingSetKiB, ws), max(r.m.childAnonKiB, cAnon)
		for _, child := range children {
			r.m.children[child] = true
		}
		r.mu.Unlock()
	}
}

// peak returns the figures sampled so far.
func (r *measuredRun) peak() measured {
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m
	m.elapsed = time.Since(r.start)
	return m
}

// exited reports whether the process has ended.
func (r *measuredRun) exited() bool {
	select {
	case <-r.ended:
		return true
	default:
		return false
	}
}

// wait waits for the process to end and returns its figures. The
// parent's peak is read once more from the kernel's accounting (wait4's
// maxrss is the larger of the process, its reaped children and what the
// benchmark held when it started the process (forkedAtKiB), so it is used
// only when it is above the last two).
func (r *measuredRun) wait() measured {
	<-r.ended
	r.mu.Lock()
	defer r.mu.Unlock()
	m := r.m
	m.elapsed, m.err, m.state = r.end.Sub(r.start), r.waitErr, r.cmd.ProcessState
	if ru, ok := m.state.SysUsage().(*syscall.Rusage); ok && ru.Maxrss > max(m.childKiB, r.forkedAtKiB) {
		m.parentKiB = max(m.parentKiB, ru.Maxrss)
	}
	return m
}

// runMeasured runs cmd to completion under startMeasured and returns its
// figures and its output; a run that fails is in measured.err.
func runMeasured(b *testing.B, cmd *exec.Cmd, cg *memCgroup) (measured, string) {
	b.Helper()
	var out lockedBuffer
	r, err := startMeasured(cmd, &out, cg)
	if err != nil {
		b.Fatal(err)
	}
	m := r.wait()
	return m, out.String()
}

// lockedBuffer is an output buffer that a process's two streams may write
// to while the benchmark reads it.
type lockedBuffer struct {
	mu sync.Mutex
	b  strings.Builder
}

func (l *lockedBuffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

func (l *lockedBuffer) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.String()
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

// renderChildEnv is the environment of a render child
// (internal/renderproc starts it with that one variable).
const renderChildEnv = "SYNCD_RENDER_CHILD=1\x00"

// renderChildren returns the children of process pid that are render
// children. A child counts only once it runs the render: between its
// clone and its exec (os/exec clones with CLONE_VM) it shares syncd's
// memory, and its VmHWM is syncd's; its environment is syncd's too, so a
// child is known by the render child's environment.
func renderChildren(pid int) []int {
	var out []int
	for _, c := range childPIDs(pid) {
		if env, err := os.ReadFile(fmt.Sprintf("/proc/%d/environ", c)); err == nil && strings.Contains(string(env), renderChildEnv) {
			out = append(out, c)
		}
	}
	return out
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
