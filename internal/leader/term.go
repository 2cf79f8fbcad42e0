package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// termEnd is how one term ended.
type termEnd int

const (
	// termStopped: the caller's context ended; the work (if any) stopped
	// and the Lease was released.
	termStopped termEnd = iota
	// termCannotRun: the work returned on its own (with the error); the
	// Lease was released.
	termCannotRun
	// termLost: the Lease was not renewed in time.
	termLost
	// termUndrained: the caller's context ended but the work outlived
	// the grace period; the Lease is kept until it expires.
	termUndrained
	// termFailed: client-go refused the election's configuration.
	termFailed
)

// term is one candidacy: from the first attempt to acquire the Lease
// until client-go's elector returned. The elector's own context is not
// the caller's: it is cancelled (which releases the Lease,
// ReleaseOnCancel) only once the work returned.
type term struct {
	e    *Elector
	ctx  context.Context // the caller's: its end is SIGTERM
	work func(context.Context) error
	// release cancels the elector's context.
	release context.CancelFunc
	// elected is closed when client-go's elector returned.
	elected chan struct{}
	// ran receives how the work returned.
	ran     chan runResult
	standby candidacy
}

// runResult is how the work returned: stopped is set when its context
// had ended (the caller's, or a lost Lease), not when it returned on its
// own.
type runResult struct {
	err     error
	stopped bool
}

// runTerm waits for the Lease, runs work while holding it and ends as
// termEnd says.
func (e *Elector) runTerm(ctx context.Context, work func(context.Context) error) (termEnd, error) {
	electCtx, release := context.WithCancel(context.WithoutCancel(ctx))
	t := &term{e: e, ctx: ctx, work: work, release: release, elected: make(chan struct{}), ran: make(chan runResult, 1)}
	t.standby.release = release
	// A standby has nothing to drain: ctx ending releases at once.
	defer context.AfterFunc(ctx, func() { t.standby.stopIfStandby() })()
	le, err := leaderelection.NewLeaderElector(t.config())
	if err != nil {
		release()
		return termFailed, fmt.Errorf("leader election on Lease %s: %w", e.lease, err)
	}
	go func() {
		defer close(t.elected)
		le.Run(electCtx)
	}()
	return t.wait()
}

// config is client-go's configuration of the term's elector.
func (t *term) config() leaderelection.LeaderElectionConfig {
	o := t.e.opts
	return leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: o.Namespace, Name: t.e.name},
			Client:     t.e.leases,
			LockConfig: resourcelock.ResourceLockConfig{Identity: o.Identity},
		},
		LeaseDuration:   o.LeaseDuration,
		RenewDeadline:   o.RenewDeadline,
		RetryPeriod:     o.RetryPeriod,
		ReleaseOnCancel: true,
		Name:            t.e.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: t.lead,
			OnStoppedLeading: func() { t.e.emit(Event{Kind: StoppedLeading}) },
			OnNewLeader:      t.newLeader,
		},
	}
}

func (t *term) newLeader(identity string) {
	if identity != t.e.opts.Identity {
		t.e.emit(Event{Kind: NewLeader, Leader: identity})
	}
}

// lead runs the work once the Lease is held (OnStartedLeading). The work
// stops when the Lease is lost (leadCtx) or the caller's context ends;
// the Lease outlives it.
func (t *term) lead(leadCtx context.Context) {
	if !t.standby.start() {
		return
	}
	runCtx, stop := context.WithCancel(leadCtx)
	defer stop()
	defer context.AfterFunc(t.ctx, stop)()
	if !t.e.waitOtherLayouts(runCtx) {
		t.ran <- runResult{stopped: true}
		return
	}
	t.ran <- t.runWork(runCtx)
}

// errStoppedOnItsOwn is why the work could not run when it returned on
// its own without an error.
var errStoppedOnItsOwn = errors.New("the work stopped on its own")

// runWork runs the work and says how it returned. Work that returned on
// its own makes the replica not ready from then on: it is never a
// standby while the Lease is held.
func (t *term) runWork(ctx context.Context) runResult {
	t.e.emit(Event{Kind: Started})
	t.e.setStatus(Leading, nil)
	r := runResult{err: t.work(ctx), stopped: ctx.Err() != nil}
	if r.stopped {
		t.e.setStatus(Standby, nil)
		return r
	}
	if r.err == nil {
		r.err = errStoppedOnItsOwn
	}
	t.e.setStatus(CannotRun, r.err)
	return r
}

// wait waits for the first of: the work returning, the elector
// returning (the Lease lost), the caller's context ending.
func (t *term) wait() (termEnd, error) {
	select {
	case r := <-t.ran:
		return t.workEnded(r)
	case <-t.elected:
		if !t.standby.stopIfStandby() {
			return termStopped, nil // a standby stopped by ctx
		}
		return t.lost()
	case <-t.ctx.Done():
	}
	if !t.standby.stopIfStandby() {
		<-t.elected
		return termStopped, nil
	}
	return t.drain()
}

// workEnded ends the term after the work returned first.
func (t *term) workEnded(r runResult) (termEnd, error) {
	switch {
	case !r.stopped:
		t.releaseAndWait()
		return termCannotRun, r.err
	case t.ctx.Err() != nil:
		t.releaseAndWait()
		t.e.emit(Event{Kind: Released})
		return termStopped, nil
	default: // the Lease was lost and the work ended at once
		<-t.elected
		return termLost, t.e.lostError()
	}
}

// releaseAndWait releases the Lease and waits for the elector.
func (t *term) releaseAndWait() {
	t.release()
	<-t.elected
}

// candidacy is whether one term's elector started the work; a standby
// stopped before that never starts it.
type candidacy struct {
	release func()

	mu               sync.Mutex
	started, stopped bool
}

// start reports whether the work may start (the term was not stopped
// as a standby) and records that it did.
func (c *candidacy) start() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.started = !c.stopped
	return c.started
}

// stopIfStandby releases the elector when the work never started, so
// it cannot start any more, and reports whether the work had started.
func (c *candidacy) stopIfStandby() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.started {
		c.stopped = true
		c.release()
	}
	return c.started
}
