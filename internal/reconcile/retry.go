package reconcile

import (
	"time"

	"k8s.io/apimachinery/pkg/util/wait"
)

// Retry is one app's failure backoff, the one rule both drivers (the
// file daemon's app loop, the App controller) follow: a failed reconcile
// is retried after a delay that doubles with each failure of the same
// revision (a wait.Backoff); a new revision, or a request (a config or
// App change, a webhook, syncd reconcile app), runs at once and starts
// the backoff over; the same revision polled again while the retry is
// pending waits for that retry. A Retry is not safe for concurrent use:
// each driver keeps one per app and uses it from one goroutine at a
// time.
type Retry struct {
	initial wait.Backoff
	backoff wait.Backoff
	// failing is the revision (its SHA) whose reconcile failed last;
	// failed says one did, since the last success or renewal.
	failing string
	failed  bool
	due     time.Time
}

// NewRetry returns the Retry of an app that has not failed; b is the
// backoff a first failure starts.
func NewRetry(b wait.Backoff) *Retry {
	return &Retry{initial: b, backoff: b}
}

// Waits reports whether work at revision rev waits for the pending retry
// instead of running now: the revision that failed, polled again, not
// asked for.
func (r *Retry) Waits(rev string, requested bool) bool {
	return r.failed && !requested && rev == r.failing
}

// Renew starts the backoff over for work that runs at once (Waits is
// false): a new revision or a request. It keeps the backoff of the
// failing revision otherwise.
func (r *Retry) Renew(rev string, requested bool) {
	if !r.Waits(rev, requested) {
		r.reset()
	}
}

// Failed records a failed reconcile of revision rev at now and returns
// how long its retry waits: the next step of the backoff, started over
// first when rev is not the revision that failed before.
func (r *Retry) Failed(rev string, now time.Time) time.Duration {
	if r.failed && rev != r.failing {
		r.reset()
	}
	after := r.backoff.Step()
	r.failing, r.failed, r.due = rev, true, now.Add(after)
	return after
}

// Succeeded records a successful reconcile: the next failure starts the
// backoff over.
func (r *Retry) Succeeded() { r.reset() }

// Remaining is how long the pending retry still waits at now (0 when
// none is pending or it is due).
func (r *Retry) Remaining(now time.Time) time.Duration {
	if !r.failed {
		return 0
	}
	return max(r.due.Sub(now), 0)
}

func (r *Retry) reset() {
	r.backoff = r.initial
	r.failing, r.failed, r.due = "", false, time.Time{}
}
