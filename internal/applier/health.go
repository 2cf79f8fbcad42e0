package applier

import (
	"context"
	"errors"
	"fmt"
	"time"

	"golang.org/x/sync/errgroup"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// DefaultWaitTimeout is how long Apply waits for a stage's objects to
// become Current when ApplyOptions.Timeout is zero.
const DefaultWaitTimeout = 5 * time.Minute

// waitInterval is how often the wait reads the objects not yet settled.
const waitInterval = 250 * time.Millisecond

// health is one waited-for object and the last kstatus result for it.
type health struct {
	t       *target
	status  status.Status
	message string
}

// settled reports whether the object's wait is over: kstatus says Current
// or Failed.
func (h *health) settled() bool {
	return h.status == status.CurrentStatus || h.status == status.FailedStatus
}

// waitStage waits until every object of the stage that was written or
// found unchanged is kstatus Current (or Failed), up to the app's timeout
// measured from written (the end of the stage's writes), and records each
// object's health in its changes. It runs once per stage after its
// writes, outside the per-object steps and their ObjectTimeout: the
// deadline is the app's. Each round reads the objects not yet settled, at
// most Options.Concurrency at once.
func (r *objectRun) waitStage(ctx context.Context, targets []*target, written time.Time) {
	timeout := r.ao.Timeout
	if timeout <= 0 {
		timeout = DefaultWaitTimeout
	}
	var hs []*health
	for _, t := range targets {
		if t == nil || t.ri == nil || len(t.changes) == 0 || failedAny(t.changes) {
			continue
		}
		hs = append(hs, &health{t: t, status: status.UnknownStatus, message: "no status computed yet"})
	}
	if len(hs) == 0 {
		return
	}
	wctx, cancel := context.WithDeadline(ctx, written.Add(timeout))
	defer cancel()
	_ = wait.PollUntilContextCancel(wctx, waitInterval, true, func(ctx context.Context) (bool, error) {
		return r.pollHealth(ctx, hs), nil
	})
	waited := time.Since(written)
	for _, h := range hs {
		h.record(waitEnd{waited: waited, cancelled: ctx.Err() != nil})
	}
}

// pollHealth reads every object not yet settled and computes its kstatus;
// it reports whether all are settled.
func (r *objectRun) pollHealth(ctx context.Context, hs []*health) bool {
	g := errgroup.Group{}
	g.SetLimit(r.a.opts.Concurrency)
	for _, h := range hs {
		if h.settled() {
			continue
		}
		g.Go(func() error {
			h.poll(ctx)
			return nil
		})
	}
	_ = g.Wait()
	for _, h := range hs {
		if !h.settled() {
			return false
		}
	}
	return true
}

// poll reads the object once and computes its kstatus. A read cut by the
// end of the wait keeps the last status seen.
func (h *health) poll(ctx context.Context) {
	u, err := h.t.ri.Get(ctx, h.t.obj.Ref.Name, metav1.GetOptions{})
	if err != nil {
		if ctx.Err() == nil && !errors.Is(err, context.DeadlineExceeded) && !errors.Is(err, context.Canceled) {
			h.message = err.Error()
		}
		return
	}
	res, err := status.Compute(u)
	if err != nil {
		h.message = err.Error()
		return
	}
	h.status, h.message = res.Status, res.Message
}

// waitEnd is how a stage's wait ended: how long it waited from the end of
// the stage's writes, and whether the run was cancelled (rather than the
// timeout reached).
type waitEnd struct {
	waited    time.Duration
	cancelled bool
}

// record writes the object's health into its changes: the kstatus status,
// and for anything but Current a message with kstatus's reason and, when
// the wait ended first, how long it really waited.
func (h *health) record(end waitEnd) {
	ref := h.t.obj.Ref
	var message string
	switch {
	case h.status == status.CurrentStatus:
	case h.status == status.FailedStatus:
		message = fmt.Sprintf("%s: status %s: %s", ref, h.status, h.message)
	case end.cancelled:
		message = fmt.Sprintf("%s: wait cancelled after %s (status %s: %s)", ref, roundWait(end.waited), h.status, h.message)
	default:
		message = fmt.Sprintf("%s: not Current after waiting %s (status %s: %s)", ref, roundWait(end.waited), h.status, h.message)
	}
	for i := range h.t.changes {
		h.t.changes[i].Health, h.t.changes[i].HealthMessage = string(h.status), message
	}
}

// roundWait rounds a wait for messages: to the second from a second up.
func roundWait(d time.Duration) time.Duration {
	if d >= time.Second {
		return d.Round(time.Second)
	}
	return d.Round(time.Millisecond)
}
