package leader

import (
	"fmt"
	"time"
)

// drain waits for the leader's work after the caller's context ended, up
// to the grace period (none: without bound), then releases the Lease.
// Work that outlives the grace period keeps the Lease held: it expires
// after the process exited.
func (t *term) drain() (termEnd, error) {
	clk, grace := t.e.opts.Clock, t.e.opts.ShutdownGrace
	start := clk.Now()
	t.e.emit(Event{Kind: Draining, Duration: grace})
	var timeout <-chan time.Time
	if grace > 0 {
		timer := clk.NewTimer(grace)
		defer timer.Stop()
		timeout = timer.C()
	}
	select {
	case <-t.ran:
		t.releaseAndWait()
		t.e.emit(Event{Kind: Drained, Duration: clk.Since(start)})
		return termStopped, nil
	case <-t.elected:
		return t.lost()
	case <-timeout:
		return t.undrained()
	}
}

// undrained gives up waiting for the work: until the process exits the
// Lease stays renewed; should the work end before that, it is released
// after all.
func (t *term) undrained() (termEnd, error) {
	grace := t.e.opts.ShutdownGrace
	t.e.emit(Event{Kind: Undrained, Duration: grace})
	go func() {
		select {
		case <-t.ran:
			t.releaseAndWait()
		case <-t.elected:
		}
	}()
	return termUndrained, fmt.Errorf("%w %s; the Lease %s is left to expire", ErrUndrained, grace, t.e.lease)
}

// lost waits for the work after the Lease was lost, only while no other
// replica can have acquired the Lease (Options.lostWait).
func (t *term) lost() (termEnd, error) {
	wait := t.e.opts.lostWait()
	t.e.emit(Event{Kind: Lost, Duration: wait})
	timer := t.e.opts.Clock.NewTimer(wait)
	defer timer.Stop()
	select {
	case <-t.ran:
	case <-timer.C():
		t.e.emit(Event{Kind: LostUndrained})
	}
	return termLost, t.e.lostError()
}
