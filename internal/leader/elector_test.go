package leader

import (
	"context"
	"errors"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/util/retry"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
)

// TestHandoverOnShutdown: a replica acquires the Lease and runs; a second
// one waits warm. The leader is stopped (SIGTERM) while an item of its
// work is held: the item finishes, nothing ends the term before it did,
// and only then is the Lease released, so the standby takes over at once
// (not after the lease expired) and starts after the leader's last item.
func TestHandoverOnShutdown(t *testing.T) {
	ns := env.Namespace(t)
	wa := &worker{every: 50 * time.Millisecond, hold: make(chan struct{})}
	a := startReplica(t, fastOptions(ns), wa.run)
	leads(t, a, ns)
	wb := &worker{every: 50 * time.Millisecond}
	b := startReplica(t, fastOptions(ns), wb.run)
	poll(t, "the standby sees the leader", func() (bool, string) { return b.events.has(NewLeader), fmt.Sprint(b.events.list()) })

	stopped := make(chan error, 1)
	go func() { stopped <- a.stop() }()
	poll(t, "the leader drains", func() (bool, string) { return a.events.has(Draining), fmt.Sprint(a.events.list()) })
	if h := holder(lease(t, ns)); h != a.el.Identity() {
		t.Errorf("Lease holder %q while the leader drains, want still %q", h, a.el.Identity())
	}
	if st := a.el.Status(); st.Phase != Leading {
		t.Errorf("draining leader's phase %s, want %s while its work runs", st.Phase, Leading)
	}
	if st, n := b.el.Status(), len(wb.spans()); st.Phase != Standby || n != 0 {
		t.Errorf("standby in phase %s with %d item(s) done while the leader drains, want %s and none", st.Phase, n, Standby)
	}
	close(wa.hold)
	if err := <-stopped; err != nil {
		t.Errorf("stopped leader: Run returned %v, want nil (drained)", err)
	}
	last := wa.lastEnd()
	if a.returned.Before(last) {
		t.Errorf("Run returned %s before the leader's in-flight item ended", last.Sub(a.returned))
	}
	if done := wa.sawCtxDone(); done.IsZero() || last.Before(done) {
		t.Errorf("the leader's work never saw its context end with an item in flight (context done %v, last item ended %v)", done, last)
	}

	poll(t, "the standby takes over", func() (bool, string) { return len(wb.spans()) > 0, string(b.el.Status().Phase) })
	first := wb.spans()[0].start
	if first.Before(last) {
		t.Errorf("the new leader started %s before the old leader's last item ended", last.Sub(first))
	}
	if took := first.Sub(a.returned); took > fastOptions(ns).LeaseDuration {
		t.Errorf("the standby started %s after the leader returned: the Lease expired instead of being released", took)
	}
	l := lease(t, ns)
	if holder(l) != b.el.Identity() || l.Spec.AcquireTime == nil || l.Spec.AcquireTime.Time.Before(last) {
		t.Errorf("Lease holder %q acquired %v, want %q, after the old leader's last item ended (%v)", holder(l), l.Spec.AcquireTime, b.el.Identity(), last)
	}
	if diff := cmp.Diff([]EventKind{Started, Draining, StoppedLeading, Drained}, a.events.list()); diff != "" {
		t.Errorf("old leader's events (-want +got):\n%s", diff)
	}
}

// TestStopReleasesTheLease: a standby stopped never runs its work and
// leaves the Lease alone; a leader stopped releases the Lease before Run
// returns (holder empty), so nobody waits for it to expire.
func TestStopReleasesTheLease(t *testing.T) {
	ns := env.Namespace(t)
	wa, wb := &worker{every: 50 * time.Millisecond}, &worker{every: 50 * time.Millisecond}
	a := startReplica(t, fastOptions(ns), wa.run)
	leads(t, a, ns)
	b := startReplica(t, fastOptions(ns), wb.run)
	poll(t, "the standby sees the leader", func() (bool, string) { return b.events.has(NewLeader), "" })

	if err := b.stop(); err != nil {
		t.Errorf("stopped standby: Run returned %v, want nil", err)
	}
	if n := len(wb.spans()); n != 0 {
		t.Errorf("the stopped standby ran %d item(s)", n)
	}
	if diff := cmp.Diff([]EventKind{StoppedLeading}, b.events.list()); diff != "" {
		t.Errorf("stopped standby's events (-want +got):\n%s", diff)
	}
	if h := holder(lease(t, ns)); h != a.el.Identity() {
		t.Errorf("Lease holder %q after the standby stopped, want the leader %q", h, a.el.Identity())
	}

	if err := a.stop(); err != nil {
		t.Errorf("stopped leader: Run returned %v, want nil", err)
	}
	if h := holder(lease(t, ns)); h != "" {
		t.Errorf("Lease holder %q once the stopped leader returned, want none (released)", h)
	}
	if a.returned.Before(wa.lastEnd()) {
		t.Errorf("Run returned before the leader's work ended")
	}
}

// TestLostLeaseHandover: another holder takes the leader's Lease. The
// leader notices within the renew deadline, its work's context ends, its
// in-flight item finishes (within lostWait), and Run returns ErrLeaseLost
// without writing the Lease back; a second replica takes over once the
// other holder's Lease expired, after the old leader's last item.
func TestLostLeaseHandover(t *testing.T) {
	ns := env.Namespace(t)
	wa := &worker{every: 50 * time.Millisecond, hold: make(chan struct{})}
	a := startReplica(t, fastOptions(ns), wa.run)
	leads(t, a, ns)
	wb := &worker{every: 50 * time.Millisecond}
	b := startReplica(t, fastOptions(ns), wb.run)

	// The leader renews between the read and the write: read again on a
	// conflict.
	err := retry.RetryOnConflict(retry.DefaultRetry, func() error {
		l := lease(t, ns)
		if l == nil {
			return fmt.Errorf("Lease %s/syncd not found", ns)
		}
		now := metav1.NewMicroTime(time.Now())
		l.Spec.HolderIdentity, l.Spec.RenewTime, l.Spec.LeaseDurationSeconds = ptr.To("ghost"), &now, ptr.To[int32](3)
		_, err := env.Clientset(t).CoordinationV1().Leases(ns).Update(context.Background(), l, metav1.UpdateOptions{})
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	poll(t, "the leader notices the loss", func() (bool, string) { return a.events.has(Lost), fmt.Sprint(a.events.list()) })
	if len(a.done) != 0 {
		t.Fatal("Run returned before the in-flight item finished, well within lostWait")
	}
	close(wa.hold)
	err = returnedWithin(t, a, 10*time.Second)
	if !errors.Is(err, ErrLeaseLost) {
		t.Errorf("Run returned %v, want ErrLeaseLost", err)
	}
	last := wa.lastEnd()
	if done := wa.sawCtxDone(); done.IsZero() || last.Before(done) {
		t.Errorf("the work did not finish its in-flight item after its context ended (context done %v, last item ended %v)", done, last)
	}
	if h := holder(lease(t, ns)); h == a.el.Identity() {
		t.Errorf("the leader that lost the Lease wrote itself back as its holder")
	}
	if diff := cmp.Diff([]EventKind{Started, StoppedLeading, Lost}, a.events.list()); diff != "" {
		t.Errorf("lost leader's events (-want +got):\n%s", diff)
	}

	poll(t, "the second replica takes over", func() (bool, string) { return len(wb.spans()) > 0, holder(lease(t, ns)) })
	if first := wb.spans()[0].start; first.Before(last) {
		t.Errorf("the new leader started %s before the old leader's last item ended", last.Sub(first))
	}
	if h := holder(lease(t, ns)); h != b.el.Identity() {
		t.Errorf("Lease holder %q, want the second replica %q", h, b.el.Identity())
	}
}

// TestShutdownGraceRunsOut (fake clock): the leader is stopped while its
// work outlives ShutdownGrace. Run returns ErrUndrained once the grace
// period passed, the Lease still held and renewed, never released while
// the work runs; once the work ends it is released after all.
func TestShutdownGraceRunsOut(t *testing.T) {
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	opts := fastOptions(ns)
	opts.Clock, opts.ShutdownGrace = clk, 10*time.Second
	wa := &worker{every: 50 * time.Millisecond, hold: make(chan struct{})}
	a := startReplica(t, opts, wa.run)
	leads(t, a, ns)

	stopped := make(chan error, 1)
	go func() { stopped <- a.stop() }()
	poll(t, "the leader drains on its grace timer", func() (bool, string) {
		return a.events.has(Draining) && clk.HasWaiters(), fmt.Sprint(a.events.list())
	})
	select {
	case err := <-stopped:
		t.Fatalf("Run returned %v before the grace period passed", err)
	default:
	}
	clk.Step(opts.ShutdownGrace)
	var err error
	select {
	case err = <-stopped:
	case <-time.After(10 * time.Second):
		t.Fatal("Run did not return once the grace period passed")
	}
	if !errors.Is(err, ErrUndrained) {
		t.Errorf("Run returned %v, want ErrUndrained", err)
	}
	l := lease(t, ns)
	if holder(l) != a.el.Identity() {
		t.Fatalf("Lease holder %q when the grace period ran out, want still %q", holder(l), a.el.Identity())
	}
	renewed := l.Spec.RenewTime.Time
	poll(t, "the Lease is still renewed while the work runs", func() (bool, string) {
		l := lease(t, ns)
		return holder(l) == a.el.Identity() && l.Spec.RenewTime.After(renewed), holder(l)
	})
	close(wa.hold)
	poll(t, "the Lease is released once the work ended", func() (bool, string) { h := holder(lease(t, ns)); return h == "", h })
	// client-go releases the Lease before it calls OnStoppedLeading, so
	// the last event may follow the release by a moment.
	want := []EventKind{Started, Draining, Undrained, StoppedLeading}
	poll(t, "the elector reports it stopped leading", func() (bool, string) {
		got := a.events.list()
		return len(got) >= len(want), fmt.Sprint(got)
	})
	if diff := cmp.Diff(want, a.events.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}

// TestCannotRunWithdraws (fake clock): the work returns on its own (its
// config is broken). The replica releases the Lease at once, reports
// Withdrawn with the reason, stays so while Options.Runnable refuses (asked
// once a lease duration passed), and becomes a candidate again, and
// leads, once it allows.
func TestCannotRunWithdraws(t *testing.T) {
	ns := env.Namespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	broken := errors.New("syncd.yaml: app web: source nowhere is not defined")
	var fixed atomic.Bool
	var asked, runs atomic.Int32
	opts := fastOptions(ns)
	opts.Clock = clk
	opts.Runnable = func(context.Context) error {
		asked.Add(1)
		if fixed.Load() {
			return nil
		}
		return broken
	}
	w := &worker{every: 50 * time.Millisecond}
	a := startReplica(t, opts, func(ctx context.Context) error {
		if runs.Add(1) == 1 {
			return broken
		}
		return w.run(ctx)
	})
	poll(t, "the replica withdraws and releases the Lease", func() (bool, string) {
		st, l := a.el.Status(), lease(t, ns)
		return st.Phase == Withdrawn && l != nil && holder(l) == "", fmt.Sprintf("%s, holder %q", st.Phase, holder(l))
	})
	if st := a.el.Status(); !errors.Is(st.Err, broken) {
		t.Errorf("Status.Err %v, want the work's error %v", st.Err, broken)
	}
	poll(t, "the replica waits on its clock", func() (bool, string) { return clk.HasWaiters(), "" })
	clk.Step(opts.LeaseDuration)
	poll(t, "Runnable is asked once a lease duration passed", func() (bool, string) { return asked.Load() > 0, "" })
	if st, h := a.el.Status(), holder(lease(t, ns)); st.Phase != Withdrawn || h != "" {
		t.Errorf("phase %s, holder %q while Runnable refuses, want %s and no holder", st.Phase, h, Withdrawn)
	}
	fixed.Store(true)
	clk.Step(opts.RetryPeriod)
	leads(t, a, ns)
	if diff := cmp.Diff([]EventKind{Started, StoppedLeading, Withdrew, CandidateAgain, Started}, a.events.list()); diff != "" {
		t.Errorf("events (-want +got):\n%s", diff)
	}
}
