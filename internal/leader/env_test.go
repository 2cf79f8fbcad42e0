package leader

import (
	"context"
	"errors"
	"slices"
	"sync"
	"testing"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

// TestMain runs the package against one control plane: the Leases are
// real, and so is client-go's elector that takes and renews them.
func TestMain(m *testing.M) {
	testenv.Main(m, testenv.Options{}, &env)
}

// Durations of the tests' elections: a Lease lost is noticed within 2 s,
// and lostWait leaves the work 1.5 s to finish.
func fastOptions(ns string) Options {
	return Options{Namespace: ns, Name: "syncd", LeaseDuration: 4 * time.Second, RenewDeadline: 2 * time.Second, RetryPeriod: 500 * time.Millisecond, ShutdownGrace: 20 * time.Second}
}

// replica is one Elector running work in the background.
type replica struct {
	el     *Elector
	events *eventLog
	cancel context.CancelFunc
	done   chan error
	// returned is when Run returned.
	returned time.Time
	once     sync.Once
	err      error
}

func startReplica(t *testing.T, opts Options, work func(context.Context) error) *replica {
	t.Helper()
	r := &replica{events: &eventLog{}, done: make(chan error, 1)}
	opts.OnEvent = r.events.add
	el, err := New(env.Clientset(t).CoordinationV1(), opts)
	if err != nil {
		t.Fatal(err)
	}
	r.el = el
	ctx, cancel := context.WithCancel(context.Background())
	r.cancel = cancel
	go func() { r.done <- el.Run(ctx, work) }()
	t.Cleanup(func() { _ = r.stop() })
	return r
}

// stop cancels the replica's context (SIGTERM) and returns what Run did.
func (r *replica) stop() error {
	r.once.Do(func() {
		r.cancel()
		r.err = <-r.done
		r.returned = time.Now()
	})
	return r.err
}

// eventLog records the kinds of a replica's events.
type eventLog struct {
	mu    sync.Mutex
	kinds []EventKind
}

func (l *eventLog) add(ev Event) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.kinds = append(l.kinds, ev.Kind)
}

// list returns the kinds so far, NewLeader left out: client-go reports a
// new leader from a goroutine of its own, at no fixed point.
func (l *eventLog) list() []EventKind {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.DeleteFunc(slices.Clone(l.kinds), func(k EventKind) bool { return k == NewLeader })
}

func (l *eventLog) has(k EventKind) bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return slices.Contains(l.kinds, k)
}

// span is one item of work, from its start to its end.
type span struct{ start, end time.Time }

// worker stands for the daemon: it starts one item after another, each
// taking every, until its context ends. The item in flight then finishes
// (once hold is closed, when hold is set) before run returns.
type worker struct {
	every time.Duration
	hold  chan struct{}

	mu      sync.Mutex
	items   []span
	ctxDone time.Time // when run saw its context end
}

func (w *worker) run(ctx context.Context) error {
	for ctx.Err() == nil {
		s := span{start: time.Now()}
		select {
		case <-time.After(w.every):
		case <-ctx.Done():
			w.mu.Lock()
			w.ctxDone = time.Now()
			w.mu.Unlock()
			if w.hold != nil {
				<-w.hold
			}
		}
		s.end = time.Now()
		w.mu.Lock()
		w.items = append(w.items, s)
		w.mu.Unlock()
	}
	return nil
}

// spans returns the items that ended so far.
func (w *worker) spans() []span {
	w.mu.Lock()
	defer w.mu.Unlock()
	return slices.Clone(w.items)
}

// sawCtxDone is when run saw its context end (zero: not yet).
func (w *worker) sawCtxDone() time.Time {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.ctxDone
}

// lastEnd is when the worker's last item ended.
func (w *worker) lastEnd() time.Time {
	s := w.spans()
	if len(s) == 0 {
		return time.Time{}
	}
	return s[len(s)-1].end
}

// lease reads the test's Lease (nil when there is none).
func lease(t *testing.T, ns string) *coordinationv1.Lease {
	t.Helper()
	l, err := env.Clientset(t).CoordinationV1().Leases(ns).Get(context.Background(), "syncd", metav1.GetOptions{})
	if err != nil {
		return nil
	}
	return l
}

func holder(l *coordinationv1.Lease) string {
	if l == nil || l.Spec.HolderIdentity == nil {
		return ""
	}
	return *l.Spec.HolderIdentity
}

// poll waits for cond with a generous deadline.
func poll(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(60 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, state := cond()
		if ok {
			return
		}
		last = state
		time.Sleep(20 * time.Millisecond)
	}
	t.Fatalf("%s: not reached in 60s; last state: %s", what, last)
}

// leads waits until r holds the test's Lease and runs its work.
func leads(t *testing.T, r *replica, ns string) {
	t.Helper()
	poll(t, r.el.Identity()+" leads", func() (bool, string) {
		st := r.el.Status()
		h := holder(lease(t, ns))
		return st.Phase == Leading && h == r.el.Identity(), string(st.Phase) + ", holder " + h
	})
}

// returnedWithin waits d for a replica's Run to return, and fails the
// test when it does not.
func returnedWithin(t *testing.T, r *replica, d time.Duration) error {
	t.Helper()
	select {
	case err := <-r.done:
		r.done <- err // for stop
		return err
	case <-time.After(d):
		t.Fatalf("%s: Run did not return within %s", r.el.Identity(), d)
		return errors.New("unreachable")
	}
}
