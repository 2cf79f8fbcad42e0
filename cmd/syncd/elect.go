package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/client-go/tools/leaderelection/resourcelock"
)

// Leader election of `syncd run` is client-go's tools/leaderelection on a
// coordination.k8s.io Lease. What syncd adds is the order of a handoff, so
// that two replicas never write at once:
//
//   - The Lease is released only after the work it guards has stopped.
//     SIGTERM stops the daemon (no new app reconcile, no new object; the
//     objects already started finish their steps) and the Lease is
//     released once Daemon.Run returned, at most --shutdown-grace-period
//     later. If the work outlives the grace period the process exits
//     without releasing: the next leader starts when the Lease expires,
//     after this process is gone, never beside it.
//   - A Lease lost (not renewed within the renew deadline) stops the work
//     the same way, waits for it only as long as no other replica can
//     have acquired the Lease yet (lease duration − renew deadline −
//     retry period, and at most the grace period), and exits non-zero, as
//     controller-runtime does: a restart is a clean candidate.
//   - A replica that wins the Lease but cannot run (Daemon.Run returns at
//     once: the config file does not load or cannot start) releases it, so
//     another replica can take over, answers /readyz with 503 and why, and
//     becomes a candidate again when the config file loads, a lease
//     duration later at the earliest.

// leaseName is the Lease of a replica: base, or base-shard-K-of-N when
// apps are spread over N shards. The count is in the name so that the
// Leases of two shard layouts (a re-shard from 2 to 3 in progress) never
// share a name while they guard different sets of apps, and a leader can
// tell another layout's Leases from its own (layout.go); the Leases of an
// old layout are simply abandoned and expire.
func leaseName(base string, shards, shard int) string {
	if shards <= 1 {
		return base
	}
	return fmt.Sprintf("%s-shard-%d-of-%d", base, shard, shards)
}

// leaseNamespace is --leader-elect-namespace, else $POD_NAMESPACE, else
// syncd-system.
func leaseNamespace(f *runFlags) string {
	if f.leaseNamespace != "" {
		return f.leaseNamespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "syncd-system"
}

// Readiness of this process in the election, for /readyz.
var (
	// leading is set while this replica holds the Lease and runs the
	// daemon (always, without leader election).
	leading atomic.Bool
	// cannotRun, when set, is why this replica gave up a Lease it won:
	// it is not ready until the config loads again.
	cannotRun atomic.Pointer[string]
)

// errLeaseLost is returned when the Lease was not renewed in time.
var errLeaseLost = errors.New("lost the Lease")

// runElected runs fn while this replica holds the Lease, as candidate
// after candidate (a replica that could not run becomes one again when
// the config loads), until ctx ends or the Lease is lost. fn must return
// once its context ends, after the work it started stopped.
func runElected(ctx context.Context, cl *cluster, f *runFlags, log *slog.Logger, fn func(context.Context) error) error {
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return withCode(exitError, err)
	}
	host, _ := os.Hostname()
	e := &election{
		f: f, log: log, fn: fn,
		ns:   leaseNamespace(f),
		name: leaseName(f.leaseName, f.shards, f.shard),
		id:   host + "_" + uuid.NewString()[:8],
		cs:   cs,
	}
	for {
		end, err := e.term(ctx)
		switch end {
		case termStopped:
			return nil
		case termCannotRun:
			msg := fmt.Sprintf("cannot run: %v; the Lease %s/%s was released for another replica, and this one is a candidate again %s", err, e.ns, e.name, candidateAgain(f))
			cannotRun.Store(&msg)
			log.Error("won the Lease but cannot run; released it", "lease", e.ns+"/"+e.name, "identity", e.id, "error", err)
			if !e.waitRunnable(ctx) {
				return nil
			}
			cannotRun.Store(nil)
			log.Info("a candidate for the Lease again", "lease", e.ns+"/"+e.name, "config", f.config)
		default: // termLost, termUndrained
			return withCode(exitError, err)
		}
	}
}

// candidateAgain says when a replica that released a Lease it could not
// use is a candidate again (waitRunnable): once its config loads, and
// without --config after a lease duration.
func candidateAgain(f *runFlags) string {
	if f.config == "" {
		return fmt.Sprintf("after %s", f.leaseDuration)
	}
	return fmt.Sprintf("once %s loads, after at least %s", f.config, f.leaseDuration)
}

// election is one replica's candidacy for one Lease.
type election struct {
	f        *runFlags
	log      *slog.Logger
	fn       func(context.Context) error
	ns, name string
	id       string
	cs       kubernetes.Interface
}

// termEnd is how one term ended.
type termEnd int

const (
	// termStopped: ctx ended; the work (if any) stopped and the Lease
	// was released.
	termStopped termEnd = iota
	// termCannotRun: fn returned on its own (with the error); the Lease
	// was released.
	termCannotRun
	// termLost: the Lease was not renewed in time.
	termLost
	// termUndrained: ctx ended but the work outlived the grace period;
	// the Lease is kept until it expires after the process exits.
	termUndrained
)

// term waits for the Lease, runs fn while holding it and ends as
// termEnd says. The elector's own context is not ctx: it is cancelled
// (which releases the Lease, ReleaseOnCancel) only once fn returned.
func (e *election) term(ctx context.Context) (termEnd, error) {
	electCtx, release := context.WithCancel(context.WithoutCancel(ctx))
	ran := make(chan runResult, 1)
	c := &candidacy{release: release}
	// A standby has nothing to drain: ctx ending releases at once.
	defer context.AfterFunc(ctx, func() { c.stopIfStandby() })()
	lease := e.ns + "/" + e.name
	le, err := leaderelection.NewLeaderElector(leaderelection.LeaderElectionConfig{
		Lock: &resourcelock.LeaseLock{
			LeaseMeta:  metav1.ObjectMeta{Namespace: e.ns, Name: e.name},
			Client:     e.cs.CoordinationV1(),
			LockConfig: resourcelock.ResourceLockConfig{Identity: e.id},
		},
		LeaseDuration:   e.f.leaseDuration,
		RenewDeadline:   e.f.renewDeadline,
		RetryPeriod:     e.f.retryPeriod,
		ReleaseOnCancel: true,
		Name:            e.name,
		Callbacks: leaderelection.LeaderCallbacks{
			OnStartedLeading: func(leadCtx context.Context) {
				if !c.start() {
					return
				}
				// The work stops when the Lease is lost (leadCtx) or
				// on SIGTERM (ctx); the Lease outlives it.
				runCtx, stop := context.WithCancel(leadCtx)
				defer stop()
				defer context.AfterFunc(ctx, stop)()
				if !e.waitOtherLayouts(runCtx) {
					ran <- runResult{stopped: true}
					return
				}
				e.log.Info("leading: applying", "lease", lease, "identity", e.id)
				leading.Store(true)
				err := e.fn(runCtx)
				r := runResult{err: err, stopped: runCtx.Err() != nil}
				if !r.stopped {
					// Returned on its own: not ready from now on,
					// never "ok (standby)" while the Lease is held.
					if r.err == nil {
						r.err = errors.New("the daemon stopped on its own")
					}
					msg := fmt.Sprintf("cannot run: %v", r.err)
					cannotRun.Store(&msg)
				}
				leading.Store(false)
				ran <- r
			},
			OnStoppedLeading: func() { e.log.Info("not leading", "lease", lease, "identity", e.id) },
			OnNewLeader: func(identity string) {
				if identity != e.id {
					e.log.Info("another replica leads; waiting warm", "leader", identity)
				}
			},
		},
	})
	if err != nil {
		release()
		return termLost, fmt.Errorf("leader election on Lease %s: %w", lease, err)
	}
	elected := make(chan struct{})
	go func() {
		defer close(elected)
		le.Run(electCtx)
	}()
	releaseAndWait := func() {
		release()
		<-elected
	}

	select {
	case r := <-ran:
		switch {
		case !r.stopped:
			releaseAndWait()
			return termCannotRun, r.err
		case ctx.Err() != nil:
			releaseAndWait()
			e.log.Info("stopped; the Lease is released", "lease", lease)
			return termStopped, nil
		default: // the Lease was lost and the work ended at once
			<-elected
			return termLost, e.lostError(lease)
		}
	case <-elected:
		if !c.stopIfStandby() {
			return termStopped, nil // a standby stopped by ctx
		}
		return e.lost(ran, lease)
	case <-ctx.Done():
	}
	if !c.stopIfStandby() {
		<-elected
		return termStopped, nil
	}
	return e.drain(ran, elected, releaseAndWait, lease)
}

// runResult is how fn returned: stopped is set when its context had
// ended (SIGTERM or a lost Lease), not when it returned on its own.
type runResult struct {
	err     error
	stopped bool
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

// drain waits for the leader's work after SIGTERM, up to the grace period
// (none: without bound), then releases the Lease. Work that outlives the
// grace period keeps the Lease held: it expires after the process exited.
func (e *election) drain(ran <-chan runResult, elected <-chan struct{}, releaseAndWait func(), lease string) (termEnd, error) {
	start := time.Now()
	e.log.Info("stopping: no new work; waiting for the objects in flight before releasing the Lease", "lease", lease, "gracePeriod", e.f.shutdownGrace.String())
	var timeout <-chan time.Time
	if e.f.shutdownGrace > 0 {
		t := time.NewTimer(e.f.shutdownGrace)
		defer t.Stop()
		timeout = t.C
	}
	select {
	case <-ran:
		releaseAndWait()
		e.log.Info("in-flight work ended; the Lease is released", "lease", lease, "waited", time.Since(start).String())
		return termStopped, nil
	case <-elected:
		return e.lost(ran, lease)
	case <-timeout:
		e.log.Error("in-flight work did not end within the shutdown grace period; exiting without releasing the Lease, which another replica takes once it expires", "lease", lease, "gracePeriod", e.f.shutdownGrace.String())
		// Until the process exits the Lease stays renewed; should the
		// work end before that, it is released after all.
		go func() {
			select {
			case <-ran:
				releaseAndWait()
			case <-elected:
			}
		}()
		return termUndrained, fmt.Errorf("in-flight work did not end within --shutdown-grace-period %s; the Lease %s is left to expire", e.f.shutdownGrace, lease)
	}
}

// lost waits for the work after the Lease was lost, only while no other
// replica can have acquired the Lease (lostLeaseWait).
func (e *election) lost(ran <-chan runResult, lease string) (termEnd, error) {
	wait := lostLeaseWait(e.f)
	e.log.Error("lost the Lease: stopping", "lease", lease, "identity", e.id, "waitForInFlight", wait.String())
	t := time.NewTimer(wait)
	defer t.Stop()
	select {
	case <-ran:
	case <-t.C:
		e.log.Error("in-flight work did not end before another replica may hold the Lease; exiting", "lease", lease)
	}
	return termLost, e.lostError(lease)
}

func (e *election) lostError(lease string) error {
	return fmt.Errorf("%w %s (not renewed within --leader-elect-renew-deadline %s); exiting so that only the new holder writes", errLeaseLost, lease, e.f.renewDeadline)
}

// lostLeaseWait is how long a replica that lost its Lease may still let
// its objects in flight finish: the renewals stopped at least the renew
// deadline (plus one retry period) before the loss was noticed, and no
// other replica may acquire the Lease before a lease duration passed
// without renewal. Never longer than the grace period.
func lostLeaseWait(f *runFlags) time.Duration {
	w := max(f.leaseDuration-f.renewDeadline-f.retryPeriod, 0)
	if f.shutdownGrace > 0 {
		w = min(w, f.shutdownGrace)
	}
	return w
}

// waitRunnable waits until the config loads (checked every retry
// period; without --config there is none to wait for), and at least a
// lease duration, so that the other replicas have the released Lease to
// themselves for a while (a config that loads may still fail to start
// here); false when ctx ended first.
func (e *election) waitRunnable(ctx context.Context) bool {
	t := time.NewTicker(max(e.f.retryPeriod, 100*time.Millisecond))
	defer t.Stop()
	notBefore := time.Now().Add(e.f.leaseDuration)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C:
		}
		if time.Now().Before(notBefore) {
			continue
		}
		if e.f.config == "" {
			return true
		}
		if _, err := loadConfigForRun(e.f.config); err == nil {
			return true
		}
	}
}

// defaultShutdownGrace is --shutdown-grace-period's default: below the
// install manifests' terminationGracePeriodSeconds (30 s) by enough for
// the HTTP servers' and the Event broadcaster's own shutdown (5 s each).
const defaultShutdownGrace = 20 * time.Second
