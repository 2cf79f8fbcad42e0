package leader

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	coordinationv1client "k8s.io/client-go/kubernetes/typed/coordination/v1"
)

// ErrLeaseLost is returned by Run when the Lease was not renewed in time.
var ErrLeaseLost = errors.New("lost the Lease")

// ErrUndrained is returned by Run when the work outlived the grace period
// after the caller's context ended; the Lease is left to expire.
var ErrUndrained = errors.New("in-flight work did not end within the shutdown grace period")

// Phase is where a replica stands in the election.
type Phase string

const (
	// Standby: a candidate, or a holder whose work has not started (it
	// waits for another shard layout) or has stopped. Ready to take over.
	Standby Phase = "Standby"
	// Leading: this replica holds the Lease and its work runs.
	Leading Phase = "Leading"
	// CannotRun: the work returned on its own (Status.Err) while the
	// Lease is held; it is being released.
	CannotRun Phase = "CannotRun"
	// Withdrawn: the replica released a Lease it could not use
	// (Status.Err) and is no candidate until Options.Runnable allows.
	Withdrawn Phase = "Withdrawn"
)

// Status is a replica's place in the election, for readiness.
type Status struct {
	Phase Phase
	// Err is why the work could not run (CannotRun, Withdrawn).
	Err error
}

// Elector is one replica's candidacy for one Lease.
type Elector struct {
	leases coordinationv1client.LeasesGetter
	opts   Options
	// name is the Lease's name (LeaseName), lease namespace/name.
	name, lease string

	mu     sync.Mutex
	status Status

	eventMu sync.Mutex
}

// New checks opts and returns the Elector of the Lease they name, on
// leases. It takes nothing yet: Run does.
func New(leases coordinationv1client.LeasesGetter, opts Options) (*Elector, error) {
	if leases == nil {
		return nil, errors.New("leader election: a Leases client is required")
	}
	opts = opts.withDefaults()
	if err := opts.validate(); err != nil {
		return nil, err
	}
	name := LeaseName(opts.Name, opts.Shards, opts.Shard)
	return &Elector{
		leases: leases,
		opts:   opts,
		name:   name,
		lease:  opts.Namespace + "/" + name,
		status: Status{Phase: Standby},
	}, nil
}

// Lease is the Lease this replica runs for, namespace/name.
func (e *Elector) Lease() string { return e.lease }

// Identity is this replica's holder identity in the Lease.
func (e *Elector) Identity() string { return e.opts.Identity }

// Status is where the replica stands now.
func (e *Elector) Status() Status {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.status
}

func (e *Elector) setStatus(p Phase, err error) {
	e.mu.Lock()
	defer e.mu.Unlock()
	e.status = Status{Phase: p, Err: err}
}

// emit tells Options.OnEvent, one event at a time.
func (e *Elector) emit(ev Event) {
	ev.Lease, ev.Identity = e.lease, e.opts.Identity
	e.eventMu.Lock()
	defer e.eventMu.Unlock()
	e.opts.OnEvent(ev)
}

// Run runs work while this replica holds the Lease, term after term (a
// replica that could not run is a candidate again once
// Options.Runnable allows), until ctx ends or the Lease is lost. work
// must return once its context ends, after what it started stopped.
//
// Run returns nil when ctx ended and the work stopped (the Lease then is
// released), an error wrapping ErrLeaseLost or ErrUndrained otherwise.
// Call it once per Elector.
func (e *Elector) Run(ctx context.Context, work func(context.Context) error) error {
	for {
		end, err := e.runTerm(ctx, work)
		switch end {
		case termStopped:
			return nil
		case termCannotRun:
			e.setStatus(Withdrawn, err)
			e.emit(Event{Kind: Withdrew, Err: err})
			if !e.waitRunnable(ctx) {
				return nil
			}
			e.setStatus(Standby, nil)
			e.emit(Event{Kind: CandidateAgain})
		default: // termLost, termUndrained, termFailed
			return err
		}
	}
}

// waitRunnable waits until Options.Runnable allows (asked every retry
// period, at least every 100ms), and at least a lease duration, so that
// the other replicas have the released Lease to themselves for a while
// (work that may run may still fail to start here); false when ctx
// ended first.
func (e *Elector) waitRunnable(ctx context.Context) bool {
	t := e.opts.Clock.NewTicker(max(e.opts.RetryPeriod, minRunnableCheck))
	defer t.Stop()
	notBefore := e.opts.Clock.Now().Add(e.opts.LeaseDuration)
	for {
		select {
		case <-ctx.Done():
			return false
		case <-t.C():
		}
		if e.opts.Clock.Now().Before(notBefore) {
			continue
		}
		if e.opts.Runnable == nil || e.opts.Runnable(ctx) == nil {
			return true
		}
	}
}

// minRunnableCheck bounds how often Options.Runnable is asked.
const minRunnableCheck = 100 * time.Millisecond

func (e *Elector) lostError() error {
	return fmt.Errorf("%w %s (not renewed within the renew deadline %s); exiting so that only the new holder writes", ErrLeaseLost, e.lease, e.opts.RenewDeadline)
}
