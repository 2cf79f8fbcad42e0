package bench

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"sort"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/bench/internal/syncdrun"
	"syncd.dev/syncd/internal/config"
)

// heapBaselineFile holds the checked-in peak live heap figures, one line
// per object count and scenario: "<objects> <scenario> <MB>".
const heapBaselineFile = "testdata/heap-baseline.txt"

// heapTolerance is how much the peak live heap may grow over the
// checked-in figure before BenchmarkHeap fails.
const heapTolerance = 0.15

// BenchmarkHeap measures the peak live heap of syncd's pipeline, in this
// process, on one app of the benchmark mix (10,000 objects, the issue's
// count; BENCH_HEAP_OBJECTS for another), in
// two scenarios:
//
//   - daemon: a first sync, a no-op and the app's drift watcher beside
//     them, as `syncd run` runs an app (watch cache on);
//   - apply-noop: then a no-op as `syncd apply` runs one, in a process of
//     its own with no watch cache (the objects' metadata read with a LIST).
//
// It reports each peak in MB and fails when one is more than 15 % above
// the figure for the same count and scenario in testdata/heap-baseline.txt:
// the memory regression check of CI's bench step (hack/test.sh). The peak
// is the largest live heap a garbage collection marked, less the heap
// before the scenario; the collector runs at GOGC 10 meanwhile so that it
// marks often and the peak is steady from run to run (apply-noop, which is
// short, runs three times and its median is kept). BENCH_HEAP_UPDATE=1
// writes the measured figures as the new baseline instead of checking
// them.
func BenchmarkHeap(b *testing.B) {
	if b.N > 1 {
		b.Skip("runs once; use -benchtime 1x")
	}
	n := 10000
	if v := os.Getenv("BENCH_HEAP_OBJECTS"); v != "" {
		var err error
		if n, err = strconv.Atoi(v); err != nil {
			b.Fatalf("BENCH_HEAP_OBJECTS: %v", err)
		}
	}
	ns := fmt.Sprintf("bench-heap-%d", n)
	cs := kubernetes.NewForConfigOrDie(env.Config)
	if _, err := cs.CoreV1().Namespaces().Create(context.Background(), &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		b.Fatal(err)
	}
	cfg := restConfig(&counter{})
	app := config.App{Name: "heap", Namespace: ns}
	scenarios := []struct {
		name string
		runs int
		run  func() error
	}{
		{"daemon", 1, func() error { return daemonSyncs(cfg, app, n) }},
		{"apply-noop", 3, func() error { return oneShotSync(cfg, app, n) }},
	}
	var failures []string
	for _, sc := range scenarios {
		mb, err := medianPeak(sc.runs, sc.run)
		if err != nil {
			b.Fatalf("%s: %v", sc.name, err)
		}
		b.ReportMetric(mb, sc.name+"_heap_peak_MB")
		fmt.Printf("peak live heap, %d objects, %s: %.1f MB\n", n, sc.name, mb)
		if os.Getenv("BENCH_HEAP_UPDATE") != "" {
			if err := writeHeapBaseline(n, sc.name, mb); err != nil {
				b.Fatal(err)
			}
			continue
		}
		if msg, err := checkHeap(n, sc.name, mb); err != nil {
			b.Fatal(err)
		} else if msg != "" {
			failures = append(failures, msg)
		}
	}
	if len(failures) > 0 {
		b.Fatalf("%s\nFind what is held longer or copied (docs/performance.md says how to profile: BENCH_MEMPROFILE_PEAK with BenchmarkMemory, BENCH_APPLY_HEAP_PROFILE with BenchmarkApplyConfig), or, if the growth is intended, rewrite %s with BENCH_HEAP_UPDATE=1 and say why in the commit",
			strings.Join(failures, "\n"), heapBaselineFile)
	}
}

// checkHeap compares a measured peak with the checked-in figure and
// returns what is wrong, empty when it is within the tolerance.
func checkHeap(n int, scenario string, mb float64) (string, error) {
	base, ok, err := heapBaseline(n, scenario)
	if err != nil {
		return "", err
	}
	if !ok {
		return "", fmt.Errorf("%s has no figure for %d objects, %s; measure one with BENCH_HEAP_UPDATE=1", heapBaselineFile, n, scenario)
	}
	if limit := base * (1 + heapTolerance); mb > limit {
		return fmt.Sprintf("peak live heap for %d objects, %s: %.1f MB, more than %.0f%% over the checked-in %.1f MB (limit %.1f MB)", n, scenario, mb, heapTolerance*100, base, limit), nil
	}
	return "", nil
}

// daemonSyncs runs a first sync and a no-op of n objects of the benchmark
// mix with the watch cache and the drift watcher on, each sync handed a
// fresh set as the daemon hands over a fresh render.
func daemonSyncs(cfg *rest.Config, app config.App, n int) error {
	s, err := syncdrun.New(cfg, app, concurrency)
	if err != nil {
		return err
	}
	defer s.Stop()
	s.WithDrift()
	for i, step := range []string{"first sync", "no-op"} {
		if _, _, err := s.SyncOwned(context.Background(), syncdrun.Objects(app.Namespace, n)); err != nil {
			return fmt.Errorf("%s (sync %d): %w", step, i+1, err)
		}
	}
	return nil
}

// oneShotSync syncs n objects of the benchmark mix once without a watch
// cache, as one `syncd apply` does.
func oneShotSync(cfg *rest.Config, app config.App, n int) error {
	s, err := syncdrun.NewOneShot(cfg, app, concurrency)
	if err != nil {
		return err
	}
	defer s.Stop()
	_, _, err = s.SyncOwned(context.Background(), syncdrun.Objects(app.Namespace, n))
	return err
}

// medianPeak runs fn runs times (fn must give the same result each time)
// and returns the median of its peak live heaps, in MB: a one-shot no-op
// is short, and its peak depends on which reads are in flight when a
// collection marks.
func medianPeak(runs int, fn func() error) (float64, error) {
	var peaks []float64
	for range runs {
		p, err := peakHeap(fn)
		if err != nil {
			return 0, err
		}
		peaks = append(peaks, float64(p)/1e6)
	}
	sort.Float64s(peaks)
	return peaks[len(peaks)/2], nil
}

// peakHeap runs fn with the collector at GOGC 10 and returns the largest
// live heap a collection marked while it ran, less the live heap before.
func peakHeap(fn func() error) (uint64, error) {
	defer debug.SetGCPercent(debug.SetGCPercent(10))
	runtime.GC()
	before := liveHeap()
	var peak atomic.Uint64
	done := make(chan struct{})
	stopped := make(chan struct{})
	go func() {
		defer close(stopped)
		for {
			peak.Store(max(peak.Load(), liveHeap()))
			select {
			case <-done:
				return
			case <-time.After(2 * time.Millisecond):
			}
		}
	}()
	err := fn()
	close(done)
	<-stopped
	peak.Store(max(peak.Load(), liveHeap()))
	if p := peak.Load(); p > before {
		return p - before, err
	}
	return 0, err
}

// liveHeap is the heap the last garbage collection marked live.
func liveHeap() uint64 {
	s := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	metrics.Read(s)
	return s[0].Value.Uint64()
}

// heapBaseline returns the checked-in figure (MB) for n objects and the
// scenario.
func heapBaseline(n int, scenario string) (float64, bool, error) {
	f, err := os.Open(heapBaselineFile)
	if err != nil {
		return 0, false, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		var objs int
		var name string
		var mb float64
		if _, err := fmt.Sscanf(line, "%d %s %g", &objs, &name, &mb); err != nil {
			return 0, false, fmt.Errorf("%s: line %q: want \"<objects> <scenario> <MB>\": %w", heapBaselineFile, line, err)
		}
		if objs == n && name == scenario {
			return mb, true, nil
		}
	}
	return 0, false, sc.Err()
}

// writeHeapBaseline sets the figure for n objects and the scenario in the
// baseline file, keeping the others and the comments.
func writeHeapBaseline(n int, scenario string, mb float64) error {
	old, err := os.ReadFile(heapBaselineFile)
	if err != nil && !os.IsNotExist(err) {
		return err
	}
	var lines []string
	replaced := false
	for _, line := range strings.Split(strings.TrimRight(string(old), "\n"), "\n") {
		var objs int
		var name string
		if _, err := fmt.Sscanf(line, "%d %s", &objs, &name); err == nil && objs == n && name == scenario {
			line, replaced = fmt.Sprintf("%d %s %.1f", n, scenario, mb), true
		}
		if line != "" || len(lines) > 0 {
			lines = append(lines, line)
		}
	}
	if !replaced {
		lines = append(lines, fmt.Sprintf("%d %s %.1f", n, scenario, mb))
	}
	return os.WriteFile(heapBaselineFile, []byte(strings.Join(lines, "\n")+"\n"), 0o644)
}
