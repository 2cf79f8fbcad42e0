//go:build linux

package daemon_test

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/heapprof"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

const (
	loadApps    = 50
	loadObjects = 200
)

// BenchmarkDaemonLoad runs one daemon (one replica) with 50 apps of 200
// ConfigMaps each from one repository on the loopback Git server, with the
// inventory on, against the package's control plane, once with a namespace
// per app and once with every app in one namespace. It reports:
//
//   - first-sync-s: from Run to every app reconciled ok (10,000 objects
//     created);
//   - commit-applied-s: from a push (commit + Trigger, as a webhook does) that
//     changes one object of one app to that app reconciled at the new
//     revision;
//   - resync-all-s: from the same push to all 50 apps reconciled at it (the
//     49 unchanged apps skip their objects through the inventory);
//   - cpu-s: user+system CPU time of the test process (daemon and this
//     harness; the control plane runs in other processes) over the run;
//   - peak-rss-MB: the test process's peak RSS (getrusage maxrss; the
//     process runs only this benchmark, so it is the daemon's plus a small
//     harness);
//   - heap-inuse-MB: Go heap in use after the first sync, after a GC
//     (BENCH_LOAD_MEMPROFILE=path writes a heap profile then; "LAYOUT" in
//     the path is replaced by the layout).
//
// The client is not rate-limited (the test config has no QPS limit); syncd
// run's default --kube-qps 50 would bound the first sync at about 10,000
// applies / 50 per second instead.
//
// Run it alone: go test -bench BenchmarkDaemonLoad -benchtime 1x -run '^$'
// ./internal/daemon/
func BenchmarkDaemonLoad(b *testing.B) {
	// namespace-per-app is the usual layout; shared-namespace puts every
	// app's objects in one namespace, where each app's drift watcher sees
	// (and caches) every other app's objects too.
	for _, layout := range []string{"namespace-per-app", "shared-namespace"} {
		b.Run(layout, func(b *testing.B) { benchLoad(b, layout == "shared-namespace") })
	}
}

func benchLoad(b *testing.B, shared bool) {
	var firstSync, commitApplied, resyncAll, cpu time.Duration
	var heap uint64
	for range b.N {
		r := runLoad(b, shared)
		firstSync += r.firstSync
		commitApplied += r.commitApplied
		resyncAll += r.resyncAll
		cpu += r.cpu
		heap = max(heap, r.heapInuse)
	}
	n := float64(b.N)
	peakKiB, err := heapprof.PeakRSS()
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(firstSync.Seconds()/n, "first-sync-s")
	b.ReportMetric(commitApplied.Seconds()/n, "commit-applied-s")
	b.ReportMetric(resyncAll.Seconds()/n, "resync-all-s")
	b.ReportMetric(cpu.Seconds()/n, "cpu-s")
	// The process's peak so far: for the second layout it is the peak of
	// both.
	b.ReportMetric(float64(peakKiB)/1024, "peak-rss-MB")
	b.ReportMetric(float64(heap)/(1<<20), "heap-inuse-MB")
}

type loadResult struct {
	firstSync, commitApplied, resyncAll, cpu time.Duration
	heapInuse                                uint64
}

func cpuTime(b *testing.B) time.Duration {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		b.Fatal(err)
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

func runLoad(b *testing.B, shared bool) loadResult {
	b.Helper()
	b.StopTimer()
	invNS := env.Namespace(b)
	// The shared namespace is not the inventory namespace: that one is
	// syncd's own, and a render declaring objects in it is refused
	// (inventory.Reserved), so no app would ever sync.
	sharedNS := env.Namespace(b)
	nsOf := func(int) string { return sharedNS }
	if !shared {
		nss := make([]string, loadApps)
		for i := range nss {
			nss[i] = env.Namespace(b)
		}
		nsOf = func(i int) string { return nss[i] }
	}
	srv := gitserver.StartTest(b)
	repo := srv.NewTestRepo(b, "fleet")
	app := func(i int) string { return fmt.Sprintf("app-%02d", i) }
	objects := func(i int, v string) []byte {
		var sb strings.Builder
		for j := range loadObjects {
			fmt.Fprintf(&sb, "---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-cm-%03d\ndata:\n  v: %q\n", app(i), j, v)
		}
		return []byte(sb.String())
	}
	files := map[string][]byte{}
	var cfg strings.Builder
	fmt.Fprintf(&cfg, "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: fleet\n  git:\n    url: %s\n    branch: main\n    interval: 1h\napps:\n", repo.URL)
	for i := range loadApps {
		files[app(i)+"/cms.yaml"] = objects(i, "1")
		fmt.Fprintf(&cfg, "- name: %s\n  source: fleet\n  path: %s\n  namespace: %s\n", app(i), app(i), nsOf(i))
	}
	sha1, err := repo.Commit("fleet", files)
	if err != nil {
		b.Fatal(err)
	}
	cfgPath := filepath.Join(b.TempDir(), "syncd.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg.String()), 0o644); err != nil {
		b.Fatal(err)
	}
	cl := clusterAt(b, env.Config)
	inv := newInventory(b, env.Config, cl, invNS)
	d, err := daemon.New(daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cl,
		Options:    reconcile.Options{CacheDir: b.TempDir(), Inventory: inv, Concurrency: 8},
		Logger:     quietLogger(),
	})
	if err != nil {
		b.Fatal(err)
	}
	allAt := func(sha string) func() (bool, string) {
		return func() (bool, string) {
			st := d.Status()
			done := 0
			for _, s := range st {
				if s.Revision == sha && s.Result == "ok" {
					done++
				} else if s.Result == "failed" || s.Result == "conflicts" {
					return false, fmt.Sprintf("app %s: %s: %s", s.App, s.Result, s.Error)
				}
			}
			return done == loadApps, fmt.Sprintf("%d/%d apps at %s", done, len(st), sha)
		}
	}

	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	var r loadResult
	cpu0 := cpuTime(b)
	start := time.Now()
	b.StartTimer()
	go func() { done <- d.Run(ctx) }()
	defer func() {
		cancel()
		<-done
	}()
	waitLoad(b, "first sync of every app", 10*time.Minute, allAt(sha1))
	r.firstSync = time.Since(start)
	b.StopTimer()
	runtime.GC()
	var ms runtime.MemStats
	runtime.ReadMemStats(&ms)
	r.heapInuse = ms.HeapInuse
	if p := os.Getenv("BENCH_LOAD_MEMPROFILE"); p != "" {
		writeHeapProfile(b, strings.ReplaceAll(p, "LAYOUT", layoutName(shared)))
	}
	labelled := 0
	for i := range loadApps {
		if !shared || i == 0 {
			list, err := env.Clientset(b).CoreV1().ConfigMaps(nsOf(i)).List(context.Background(), metav1.ListOptions{LabelSelector: inventory.LabelPartOf})
			if err != nil {
				b.Fatal(err)
			}
			labelled += len(list.Items)
		}
	}
	if labelled != loadApps*loadObjects {
		b.Fatalf("after the first sync %d ConfigMaps carry the part-of label, want %d", labelled, loadApps*loadObjects)
	}

	// A push changing one object of one app.
	changed := objects(7, "1")
	changed = []byte(strings.Replace(string(changed), "name: app-07-cm-042\ndata:\n  v: \"1\"", "name: app-07-cm-042\ndata:\n  v: \"2\"", 1))
	sha2, err := repo.Commit("one change", map[string][]byte{app(7) + "/cms.yaml": changed})
	if err != nil {
		b.Fatal(err)
	}
	b.StartTimer()
	pushed := time.Now()
	if err := d.Trigger("fleet"); err != nil {
		b.Fatal(err)
	}
	waitLoad(b, "changed app applied", 5*time.Minute, func() (bool, string) {
		for _, s := range d.Status() {
			if s.App == app(7) {
				return s.Revision == sha2 && s.Result == "ok", fmt.Sprintf("%+v", s)
			}
		}
		return false, "no status for " + app(7)
	})
	r.commitApplied = time.Since(pushed)
	waitLoad(b, "every app at the new revision", 5*time.Minute, allAt(sha2))
	r.resyncAll = time.Since(pushed)
	b.StopTimer()
	r.cpu = cpuTime(b) - cpu0
	cm, err := env.Clientset(b).CoreV1().ConfigMaps(nsOf(7)).Get(context.Background(), "app-07-cm-042", metav1.GetOptions{})
	if err != nil {
		b.Fatal(err)
	}
	if cm.Data["v"] != "2" {
		b.Fatalf("app-07-cm-042 v = %q after the push, want 2", cm.Data["v"])
	}
	return r
}

// layoutName names the layout in file names.
func layoutName(shared bool) string {
	if shared {
		return "shared"
	}
	return "per-app"
}

// writeHeapProfile writes a heap profile to path (BENCH_LOAD_MEMPROFILE,
// "LAYOUT" replaced by the layout: what the daemon holds after the first
// sync).
func writeHeapProfile(b *testing.B, path string) {
	f, err := os.Create(path)
	if err != nil {
		b.Fatal(err)
	}
	defer f.Close()
	if err := pprof.WriteHeapProfile(f); err != nil {
		b.Fatal(err)
	}
}

// waitLoad polls cond until it holds or timeout passes.
func waitLoad(b *testing.B, what string, timeout time.Duration, cond func() (bool, string)) {
	b.Helper()
	deadline := time.Now().Add(timeout)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(20 * time.Millisecond)
	}
	b.Fatalf("%s: not reached in %s; last state: %s", what, timeout, last)
}
