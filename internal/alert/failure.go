package alert

import (
	"time"

	"syncd.dev/syncd/internal/redact"
)

// Failures pairs an app's error alerts with their resolution: every
// failed attempt is an open error finding (the notifier sends it once
// while open), and the first attempt that succeeds after failures
// resolves it. It is not safe for concurrent use; a driver keeps one per
// app and calls it from the app's reconcile.
type Failures struct {
	failing bool
}

// Event returns the alert of an attempt of app at revision that ended
// with err (nil: success) at the given time: an error alert for a
// failure (its summary scrubbed of values by package redact), a resolved
// one for the first success after a failure, and ok false when there is
// nothing to tell.
func (f *Failures) Event(app, revision string, err error, at time.Time) (ev Event, ok bool) {
	ev = Event{Type: EventError, App: app, Revision: revision, Time: at}
	switch {
	case err != nil:
		f.failing = true
		ev.Summary = redact.Error(err)
		return ev, true
	case f.failing:
		f.failing = false
		ev.Resolved = true
		ev.Summary = "app " + app + " reconciles again"
		return ev, true
	}
	return Event{}, false
}
