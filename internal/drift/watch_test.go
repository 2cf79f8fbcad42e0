package drift

import (
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// recorder keeps every change a Watcher publishes.
type recorder struct {
	mu      sync.Mutex
	changes []Delta
	notify  chan struct{}
}

func newRecorder() *recorder { return &recorder{notify: make(chan struct{}, 1)} }

func (r *recorder) record(c Delta) {
	r.mu.Lock()
	r.changes = append(r.changes, c)
	r.mu.Unlock()
	select {
	case r.notify <- struct{}{}:
	default:
	}
}

// waitFor polls the recorded changes, from index from on, until match
// finds one, and returns its index; it fails the test after deadline.
func (r *recorder) waitFor(t testing.TB, from int, deadline time.Duration, what string, match func(Delta) bool) int {
	t.Helper()
	timeout := time.After(deadline)
	for {
		r.mu.Lock()
		for i := from; i < len(r.changes); i++ {
			if match(r.changes[i]) {
				r.mu.Unlock()
				return i
			}
		}
		n := len(r.changes)
		r.mu.Unlock()
		select {
		case <-r.notify:
		case <-time.After(100 * time.Millisecond):
		case <-timeout:
			t.Fatalf("no change with %s within %s; %d changes seen", what, deadline, n)
		}
	}
}

func (r *recorder) len() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return len(r.changes)
}

func hasFinding(fs []Finding, path string, class Class, culprit string) bool {
	for _, f := range fs {
		if f.Path == path && f.Class == class && f.Culprit == culprit {
			return true
		}
	}
	return false
}

// startWatcher runs a Watcher on plan until the test ends.
func startWatcher(t testing.TB, c *cluster, plan *planner.Plan, opts Options) (*Watcher, *recorder) {
	return startWatcherDebounce(t, c, plan, opts, 0)
}

func startWatcherDebounce(t testing.TB, c *cluster, plan *planner.Plan, opts Options, debounce time.Duration) (*Watcher, *recorder) {
	t.Helper()
	return startWatcherWith(t, c, plan, opts, WatcherOptions{Debounce: debounce})
}

// runWatcher builds a Watcher from wo, sets plan and runs it until the
// test ends.
func runWatcher(t testing.TB, c *cluster, plan *planner.Plan, opts Options, wo WatcherOptions) *Watcher {
	t.Helper()
	w, err := NewWatcher(c.dyn, c.mapper, wo)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.SetPlan(plan, opts); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
	return w
}

func seedPlan(t testing.TB, ns string) *planner.Plan {
	return mustPlan(t, config.App{Name: "app", Namespace: ns}, `
apiVersion: v1
kind: ConfigMap
metadata: {name: seed}
data: {color: blue}
`, `
apiVersion: v1
kind: ConfigMap
metadata: {name: quiet}
data: {k: v}
`)
}

// TestWatcher checks that an out-of-band write is published as a new
// finding without polling, that syncd taking the field back resolves it,
// and that a deletion is published.
func TestWatcher(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := seedPlan(t, ns)
	c.applyPlan(t, plan, false)
	w, rec := startWatcher(t, c, plan, Options{})

	// Nothing is drifting: wait until the watcher has computed both
	// objects (no change is published for a clean object), then write.
	cm := plan.Objects[1].Desired // "seed" sorts after "quiet"
	if cm.GetName() != "seed" {
		t.Fatalf("plan order: %s", cm.GetName())
	}
	c.mergePatch(t, cm, "operator", `{"data":{"color":"green"}}`)
	i := rec.waitFor(t, 0, 30*time.Second, "a taken-over .data.color", func(ch Delta) bool {
		return hasFinding(ch.New, ".data.color", TakenOver, "operator")
	})
	if got := w.Report(); len(got.Findings) != 1 {
		t.Errorf("Report holds %d findings, want 1: %+v", len(got.Findings), got.Findings)
	}

	c.applyPlan(t, plan, true) // syncd forces the field back
	i = rec.waitFor(t, i+1, 30*time.Second, "the take-over resolved", func(ch Delta) bool {
		return hasFinding(ch.Resolved, ".data.color", TakenOver, "operator")
	})
	if got := w.Report(); got.HasDrift() {
		t.Errorf("drift after syncd took the field back: %+v", got.Findings)
	}

	if err := c.resource(t, cm).Delete(context.Background(), "seed", deleteNow); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, i+1, 30*time.Second, "a deleted finding", func(ch Delta) bool {
		return hasFinding(ch.New, "", Deleted, "")
	})
}

// TestFlapping has syncd's manager and "fighter" force-apply different
// values in turn: the watcher observes every owner flip and reports the
// field as flapping.
func TestFlapping(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := seedPlan(t, ns)
	c.applyPlan(t, plan, false)
	flaps, err := NewFlapDetector(FlapOptions{Flips: 4, Window: 10 * time.Minute})
	if err != nil {
		t.Fatal(err)
	}
	_, rec := startWatcher(t, c, plan, Options{Flaps: flaps})
	ref := plan.Objects[1].Ref
	fighter := obj(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: seed, namespace: %s}, data: {color: red}}`, ns))
	for round := 0; round < 3; round++ {
		c.apply(t, fighter, "fighter", true)
		waitFlaps(t, flaps, ref, "fighter")
		c.applyPlan(t, plan, true)
		waitFlaps(t, flaps, ref, "syncd-app")
	}
	rec.waitFor(t, 0, 30*time.Second, "a flapping .data.color", func(ch Delta) bool {
		return hasFinding(ch.New, ".data.color", Flapping, "fighter")
	})
	if !flaps.Flapping(ref, ".data.color") {
		t.Error("FlapDetector.Flapping = false")
	}
	if flaps.Flapping(ref, ".data.other") {
		t.Error("an undeclared field is flapping")
	}
	r := Detect(plan, c.live(t, plan), Options{Flaps: flaps})
	if !hasFinding(r.Findings, ".data.color", Flapping, "fighter") {
		t.Errorf("Detect with the detector has no flapping finding: %+v", r.Findings)
	}
	if testing.Verbose() {
		_ = r.WriteText(testWriter{t})
	}
}

// waitFlaps waits until the detector last saw owner on the seed's
// .data.color, so that each write of the fight is an observed flip.
func waitFlaps(t testing.TB, d *FlapDetector, ref planner.ObjectRef, owner string) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		if got, ok := d.owner(ref, ".data.color"); ok && got == owner {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("the watcher never observed %s owning .data.color", owner)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// BenchmarkWatchLatency measures the time from an out-of-band write
// returning to the Watcher publishing the change, with the default 200ms
// debounce and with a 10ms one (the cost beyond the debounce), alternating
// a take-over and syncd taking the field back.
func BenchmarkWatchLatency(b *testing.B) {
	for _, d := range []time.Duration{200 * time.Millisecond, 10 * time.Millisecond} {
		b.Run("debounce="+d.String(), func(b *testing.B) { benchmarkWatchLatency(b, d) })
	}
}

func benchmarkWatchLatency(b *testing.B, debounce time.Duration) {
	c := newCluster(b)
	ns := env.Namespace(b)
	plan := seedPlan(b, ns)
	c.applyPlan(b, plan, false)
	_, rec := startWatcherDebounce(b, c, plan, Options{}, debounce)
	cm := plan.Objects[1].Desired
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		from := rec.len()
		start := time.Now()
		c.mergePatch(b, cm, "operator", fmt.Sprintf(`{"data":{"color":"green-%d"}}`, i))
		rec.waitFor(b, from, 30*time.Second, "the take-over", func(ch Delta) bool {
			return hasFinding(ch.New, ".data.color", TakenOver, "operator")
		})
		total += time.Since(start)
		b.StopTimer()
		from = rec.len()
		c.applyPlan(b, plan, true)
		rec.waitFor(b, from, 30*time.Second, "the resolution", func(ch Delta) bool {
			return hasFinding(ch.Resolved, ".data.color", TakenOver, "operator")
		})
		b.StartTimer()
	}
	b.ReportMetric(float64(total.Milliseconds())/float64(b.N), "ms/publish")
}

// TestWatcherSetPlan checks that findings of an object that leaves the
// plan are resolved, and that the watcher keeps watching the new plan.
func TestWatcherSetPlan(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := seedPlan(t, ns)
	c.applyPlan(t, plan, false)
	c.mergePatch(t, plan.Objects[1].Desired, "operator", `{"data":{"color":"green"}}`)
	w, rec := startWatcher(t, c, plan, Options{})
	i := rec.waitFor(t, 0, 30*time.Second, "the existing take-over", func(ch Delta) bool {
		return hasFinding(ch.New, ".data.color", TakenOver, "operator")
	})

	only := *plan
	only.Objects = plan.Objects[:1] // "quiet" stays, "seed" leaves
	if err := w.SetPlan(&only, Options{}); err != nil {
		t.Fatal(err)
	}
	i = rec.waitFor(t, i+1, 30*time.Second, "the take-over resolved by SetPlan", func(ch Delta) bool {
		return hasFinding(ch.Resolved, ".data.color", TakenOver, "operator")
	})
	c.mergePatch(t, plan.Objects[0].Desired, "operator", `{"data":{"k":"changed"}}`)
	rec.waitFor(t, i+1, 30*time.Second, "a take-over on the remaining object", func(ch Delta) bool {
		return hasFinding(ch.New, ".data.k", TakenOver, "operator")
	})
	if got := w.Report(); len(got.Findings) != 1 || got.Findings[0].Path != ".data.k" {
		t.Errorf("Report after SetPlan: %+v", got.Findings)
	}
}
