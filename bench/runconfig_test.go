package bench

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/kubernetes"
)

// BenchmarkRunConfig runs the real binary as it ships (buildSyncd) as the
// daemon, `syncd run --config`, on one app of 10,000 objects of the
// benchmark mix (BENCH_RUN_OBJECTS) from a file:// Git repository, with
// the app's drift watcher on as the daemon runs it: the first sync, one
// no-op (the source's next poll, BENCH_RUN_INTERVAL, re-runs the app),
// then one object edited as kubectl edit does and the drift watch for
// BENCH_RUN_WATCH more. It reports the time of each phase and the peak
// RSS of syncd (after the first sync, after the no-op, at the end), its
// anonymous part, the peak of its render child, and the Go memory limit
// syncd says it set. BENCH_CGROUP_LIMIT runs it in a memory cgroup
// (newMemCgroup).
func BenchmarkRunConfig(b *testing.B) {
	n := envInt(b, "BENCH_RUN_OBJECTS", 10000)
	runDaemonBench(b, daemonBench{name: "run", trees: []repoTree{{path: "apps/bench-run", ns: "bench-run", n: n}}})
}

// BenchmarkRunApps runs the shipped binary as the daemon, `syncd run
// --config`, on 50 apps (BENCH_RUN_APPS) of 200 objects each
// (BENCH_RUN_APP_OBJECTS), each its own directory of one file:// Git
// repository and its own namespace, until every app synced once and ran
// one no-op, then one object edited and the drift watch, as
// BenchmarkRunConfig; it reports the same figures.
func BenchmarkRunApps(b *testing.B) {
	apps, n := envInt(b, "BENCH_RUN_APPS", 50), envInt(b, "BENCH_RUN_APP_OBJECTS", 200)
	trees := make([]repoTree, apps)
	for i := range trees {
		ns := fmt.Sprintf("bench-apps-%02d", i)
		trees[i] = repoTree{path: "apps/" + ns, ns: ns, n: n}
	}
	runDaemonBench(b, daemonBench{name: "apps", trees: trees})
}

// daemonBench is one run of the daemon over the apps of trees.
type daemonBench struct {
	name  string
	trees []repoTree
}

// daemonFigures are the figures of one daemon run.
type daemonFigures struct {
	firstSync, noop time.Duration // wall time until every app did it
	// firstMax and noopMax are the longest reconcile of each round, as
	// syncd logged it.
	firstMax, noopMax time.Duration
	driftSeen         time.Duration // from the edit until syncd logged it
	afterFirst        measured      // the peaks when every app synced once
	afterNoop         measured      // and when every app ran its no-op
	end               measured
	memLimit          string
	failed            error // the phase the run did not get past
}

// runDaemonBench runs syncd run over db's apps, measured, and prints the
// figures.
func runDaemonBench(b *testing.B, db daemonBench) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	bin := buildSyncd(b)
	dir := b.TempDir()
	invNS := "bench-" + db.name + "-inventory"
	nss := []string{invNS}
	objects := 0
	for _, t := range db.trees {
		nss = append(nss, t.ns)
		objects += t.n
	}
	createNamespaces(b, nss...)
	repo := writeRepo(b, filepath.Join(dir, "repo"), db.trees)
	config := filepath.Join(dir, "syncd.yaml")
	writeConfig(b, config, repo, envDuration(b, "BENCH_RUN_INTERVAL", 15*time.Second), db.trees)
	cmd := exec.Command(bin, "run", "--config", config, "--cache-dir", filepath.Join(dir, "cache"), "--listen", "127.0.0.1:0", "--log-format", "json")
	cmd.Env = syncdEnv("KUBECONFIG="+env.Kubeconfig, "POD_NAMESPACE="+invNS, "HOME="+dir)
	if p := os.Getenv("BENCH_RUN_HEAP_PROFILE"); p != "" {
		cmd.Env = append(cmd.Env, "SYNCD_HEAP_PROFILE_PEAK="+p)
	}
	cg := newMemCgroup(b, "run-"+db.name)
	if cg != nil {
		cg.wrap(b, cmd)
	}
	log := &daemonLog{}
	r, err := startMeasured(cmd, log, cg)
	if err != nil {
		b.Fatal(err)
	}
	f := driveDaemon(b, r, log, db)
	_ = cmd.Process.Signal(syscall.SIGTERM)
	f.end = r.wait()
	f.memLimit = log.memoryLimit()
	if f.end.err != nil && f.failed == nil {
		f.failed = fmt.Errorf("exit after SIGTERM: %w", f.end.err)
	}
	cgroup, _ := cgroupOutcome(b, cg, cmd, f.end, log.String())
	if f.failed != nil {
		msg := fmt.Sprintf("%s: %v; syncd's last log lines but the per-object ones:\n%s", db.name, f.failed, strings.Join(log.lastNotable(), "\n"))
		if cg == nil {
			b.Fatal(msg)
		}
		fmt.Println(msg) // not b.Log: a benchmark's log is cut to ten lines
	}
	printDaemonFigures(b, db, objects, f, cgroup)
}

// driveDaemon waits for the phases of a daemon run: every app synced
// once, every app ran its no-op, one object's edit seen as drift, then
// the watch. The first phase the daemon did not get through is in
// failed.
func driveDaemon(b *testing.B, r *measuredRun, log *daemonLog, db daemonBench) daemonFigures {
	var f daemonFigures
	apps := make([]string, len(db.trees))
	for i, t := range db.trees {
		apps[i] = appName(t)
	}
	const timeout = 60 * time.Minute
	if f.failed = waitDaemon(r, log, timeout, func() bool { return log.reconciledAll(apps, 1) }); f.failed != nil {
		f.failed = fmt.Errorf("first sync: %w", f.failed)
		return f
	}
	f.afterFirst = r.peak()
	f.firstSync, f.firstMax = f.afterFirst.elapsed, log.longest(apps, 0)
	if f.failed = waitDaemon(r, log, timeout, func() bool { return log.reconciledAll(apps, 2) }); f.failed != nil {
		f.failed = fmt.Errorf("no-op: %w", f.failed)
		return f
	}
	f.afterNoop = r.peak()
	f.noop = f.afterNoop.elapsed - f.afterFirst.elapsed
	f.noopMax = log.longest(apps, 1)
	edited := time.Now()
	if err := editObject(db.trees[0].ns, "obj-00000"); err != nil {
		b.Fatal(err)
	}
	if f.failed = waitDaemon(r, log, 5*time.Minute, func() bool { return log.driftSeen("obj-00000") }); f.failed != nil {
		f.failed = fmt.Errorf("drift watch: %w", f.failed)
		return f
	}
	f.driftSeen = time.Since(edited)
	watch := envDuration(b, "BENCH_RUN_WATCH", 10*time.Second)
	time.Sleep(watch) // the watch itself is what is measured: it runs for this long
	return f
}

// waitDaemon polls done until it holds, the daemon exits, logs a failed
// reconcile, or timeout passes.
func waitDaemon(r *measuredRun, log *daemonLog, timeout time.Duration, done func() bool) error {
	deadline := time.Now().Add(timeout)
	for !done() {
		switch {
		case r.exited():
			return errors.New("syncd exited")
		case log.failure() != "":
			return fmt.Errorf("reconcile failed: %s", log.failure())
		case time.Now().After(deadline):
			return fmt.Errorf("not done after %s", timeout)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return nil
}

// editObject changes a ConfigMap's data under another field manager, as
// kubectl edit does: drift for the app that applied it.
func editObject(ns, name string) error {
	cs := kubernetes.NewForConfigOrDie(env.Config)
	_, err := cs.CoreV1().ConfigMaps(ns).Patch(context.Background(), name, types.MergePatchType,
		[]byte(`{"data":{"payload":"edited by hand"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	return err
}

// printDaemonFigures prints and reports the figures of a daemon run.
func printDaemonFigures(b *testing.B, db daemonBench, objects int, f daemonFigures, cgroup string) {
	var sb strings.Builder
	fmt.Fprintf(&sb, "\n`syncd run --config`, %d app(s), %d objects in all; Go memory limit: %s\n\n", len(db.trees), objects, f.memLimit)
	fmt.Fprintf(&sb, "| phase | time | peak RSS, syncd | of it anonymous | peak RSS, render child (anonymous) |\n|---|---:|---:|---:|---:|\n")
	row := func(phase, took string, m measured) {
		fmt.Fprintf(&sb, "| %s | %s | %.0f MiB | %.0f MiB | %.0f MiB (%.0f MiB) |\n", phase, took, mib(m.parentKiB), mib(m.anonKiB), mib(m.childKiB), mib(m.childAnonKiB))
	}
	row("first sync (every app once)", fmt.Sprintf("%.1f s (longest app %.1f s)", f.firstSync.Seconds(), f.firstMax.Seconds()), f.afterFirst)
	row("+ no-op (every app)", fmt.Sprintf("%.1f s (longest app %.1f s)", f.noop.Seconds(), f.noopMax.Seconds()), f.afterNoop)
	row("+ drift watch, one edit", fmt.Sprintf("edit seen in %.1f s; run %.1f s in all", f.driftSeen.Seconds(), f.end.elapsed.Seconds()), f.end)
	if cgroup != "" {
		fmt.Fprintf(&sb, "\nmemory cgroup: %s\n", cgroup)
	}
	if f.failed != nil {
		fmt.Fprintf(&sb, "\nthe run did not finish: %v\n", f.failed)
	}
	b.ReportMetric(f.firstSync.Seconds(), "first_sync_s")
	b.ReportMetric(f.noopMax.Seconds(), "noop_s")
	b.ReportMetric(mib(f.end.parentKiB), "RSS_MiB")
	b.ReportMetric(mib(f.end.anonKiB), "anon_RSS_MiB")
	b.ReportMetric(mib(f.end.childKiB), "render_RSS_MiB")
	b.Log(sb.String())
	fmt.Print(sb.String())
}

// daemonLog reads syncd run's JSON log as it is written: the reconciles
// each app finished (with their durations), drift findings, the first
// failed reconcile and the Go memory limit line.
type daemonLog struct {
	mu      sync.Mutex
	all     strings.Builder
	partial []byte
	// reconciles are the durations of each app's finished reconciles.
	reconciles map[string][]time.Duration
	drifted    map[string]bool // objects syncd logged drift of
	failed     string
	memLimit   string
	// notable are the last lines that are not about one object's apply.
	notable []string
}

// notableLines is how many of the last lines not about one object's
// apply daemonLog keeps, to say why a run failed.
const notableLines = 40

// logLine is the part of a log line daemonLog reads.
type logLine struct {
	Msg        string  `json:"msg"`
	App        string  `json:"app"`
	Duration   string  `json:"duration"`
	Object     string  `json:"object"`
	Error      string  `json:"error"`
	Source     string  `json:"source"`
	LimitBytes float64 `json:"limitBytes"`
	Container  float64 `json:"containerLimitBytes"`
}

func (l *daemonLog) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.all.Write(p)
	l.partial = append(l.partial, p...)
	for {
		i := strings.IndexByte(string(l.partial), '\n')
		if i < 0 {
			break
		}
		l.read(l.partial[:i])
		l.partial = l.partial[i+1:]
	}
	return len(p), nil
}

// read takes one log line in.
func (l *daemonLog) read(line []byte) {
	var ll logLine
	if json.Unmarshal(line, &ll) != nil || !strings.HasPrefix(ll.Msg, "object ") {
		l.notable = append(l.notable, string(line))
		if len(l.notable) > notableLines {
			l.notable = l.notable[1:]
		}
	}
	if json.Unmarshal(line, &ll) != nil {
		return
	}
	switch {
	case ll.Msg == "reconciled":
		d, _ := time.ParseDuration(ll.Duration)
		if l.reconciles == nil {
			l.reconciles = map[string][]time.Duration{}
		}
		l.reconciles[ll.App] = append(l.reconciles[ll.App], d)
	case ll.Msg == "reconcile failed" && l.failed == "":
		l.failed = ll.App + ": " + ll.Error
	case strings.HasPrefix(ll.Msg, "drift: "):
		if l.drifted == nil {
			l.drifted = map[string]bool{}
		}
		l.drifted[ll.Object] = true
	case strings.HasPrefix(ll.Msg, "Go memory limit"):
		l.memLimit = ll.Source
		if ll.LimitBytes > 0 {
			l.memLimit = fmt.Sprintf("%.0f MiB (%s", ll.LimitBytes/(1<<20), ll.Source)
			if ll.Container > 0 {
				l.memLimit += fmt.Sprintf(" limit %.0f MiB", ll.Container/(1<<20))
			}
			l.memLimit += ")"
		}
	}
}

// reconciledAll reports whether each of apps finished n reconciles.
func (l *daemonLog) reconciledAll(apps []string, n int) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for _, a := range apps {
		if len(l.reconciles[a]) < n {
			return false
		}
	}
	return true
}

// longest is the longest i-th reconcile (0: the first) of apps.
func (l *daemonLog) longest(apps []string, i int) time.Duration {
	l.mu.Lock()
	defer l.mu.Unlock()
	var d time.Duration
	for _, a := range apps {
		if rs := l.reconciles[a]; len(rs) > i {
			d = max(d, rs[i])
		}
	}
	return d
}

// driftSeen reports whether syncd logged drift of an object whose
// reference ends in name.
func (l *daemonLog) driftSeen(name string) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	for o := range l.drifted {
		if strings.HasSuffix(o, "/"+name) {
			return true
		}
	}
	return false
}

// lastNotable returns the last lines not about one object's apply.
func (l *daemonLog) lastNotable() []string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]string(nil), l.notable...)
}

func (l *daemonLog) failure() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.failed
}

// memoryLimit is the Go memory limit syncd logged at start ("" if it did
// not).
func (l *daemonLog) memoryLimit() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.memLimit == "" {
		return "not logged"
	}
	return l.memLimit
}

func (l *daemonLog) String() string {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.all.String()
}
