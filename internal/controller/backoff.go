package controller

import (
	"math"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/reconcile"
)

// defaultBackoff is an App's retry backoff when Options.Backoff is not
// set: retryBase doubling to retryMax, each delay plus up to 10% at
// random (the file daemon's shape, with a shorter first retry).
func defaultBackoff() wait.Backoff {
	return wait.Backoff{Duration: retryBase, Factor: 2, Jitter: 0.1, Steps: math.MaxInt32, Cap: retryMax}
}

// backoffs are the Apps' failure backoffs (reconcile.Retry, the file
// daemon's rule), by App key, and the Apps an event queued since their
// last dequeue. An App backing off is dequeued again at its source's
// interval as well as at its retry: a new revision then runs at once and
// starts the backoff over, as the file daemon's next poll does; the
// revision that failed waits for the retry.
type backoffs struct {
	initial wait.Backoff

	mu        sync.Mutex
	byApp     map[string]*reconcile.Retry
	requested map[string]bool
}

func newBackoffs(b wait.Backoff) *backoffs {
	return &backoffs{initial: b, byApp: map[string]*reconcile.Retry{}, requested: map[string]bool{}}
}

// request records that an event queued the App key: its next dequeue
// runs it at once.
func (b *backoffs) request(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.requested[key] = true
}

// take returns the App's backoff for one dequeue, taking its request.
// The work queue never hands one key to two workers at once, so the
// Retry is used by one goroutine at a time.
func (b *backoffs) take(key string) appRetry {
	b.mu.Lock()
	defer b.mu.Unlock()
	rt := b.byApp[key]
	if rt == nil {
		rt = reconcile.NewRetry(b.initial)
		b.byApp[key] = rt
	}
	requested := b.requested[key]
	delete(b.requested, key)
	return appRetry{Retry: rt, requested: requested}
}

// forget drops the backoff of an App that is gone.
func (b *backoffs) forget(key string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	delete(b.byApp, key)
	delete(b.requested, key)
}

// appRetry is an App's backoff as one dequeue sees it: whether an event
// queued it (a request runs at once and starts the backoff over).
type appRetry struct {
	*reconcile.Retry
	requested bool
}

// waits reports whether this dequeue only looks at the source: it is
// still at the revision that failed, its retry is not due and nobody
// asked for a reconcile.
func (r appRetry) waits(rev string, now time.Time) bool {
	return r.Waits(rev, r.requested) && r.Remaining(now) > 0
}

// renew starts the backoff over when the dequeue runs a new revision or
// a request.
func (r appRetry) renew(rev string) { r.Renew(rev, r.requested) }

// lookAgain is when an App backing off is dequeued again: at its retry,
// or at its source's next poll if that is sooner.
func (r appRetry) lookAgain(now time.Time, poll time.Duration) time.Duration {
	return min(r.Remaining(now), poll)
}
