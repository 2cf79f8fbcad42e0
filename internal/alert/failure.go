package alert

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// Attempt is how one attempt to sync an app ended, as Failures judges
// it: a reconcile, or a poll of one of the app's sources.
type Attempt struct {
	App string
	// Revision is the revision attempted; for a source failure, the one
	// still in force ("" when the source never answered).
	Revision string
	// Stage is where the attempt failed; Result how it ended
	// (reconcile.ResultFailed for a failure before any reconcile).
	Stage  reconcile.Stage
	Result reconcile.Result
	// Reason is the driver's own name for the failure, when it has one
	// (an App's Ready reason: SourceNotFound, InvalidSpec, ...); part of
	// the cause.
	Reason string
	// Err is the failure; nil for a success.
	Err error
	At  time.Time
}

// Failures pairs an app's error alerts with their resolution. A failure
// is identified by its cause (failureCause): where it happened, what
// kind of failure it is, and the revision it happened at. The same cause
// again (a retry) is the same error alert, which the notifier sends once;
// a failure with another cause is a new error alert, and the one it
// replaces is resolved as superseded, so the open error alert is always
// the app's current problem. The first success after failures resolves
// the open one.
//
// It is not safe for concurrent use; a driver keeps one per app (the
// file daemon one more per source the app reads, which its polls resolve)
// and calls it from one goroutine at a time.
type Failures struct {
	open *failure // the failure alerted last, until resolved
}

// failure is an open error alert and the attempt that raised it.
type failure struct {
	attempt Attempt
	ev      Event
}

// Events returns the alerts of attempt a: for a failure, its error alert
// and, when it replaces an open failure of another cause, that one
// resolved; for the first success after a failure, its resolution; none
// otherwise.
func (f *Failures) Events(a Attempt) []Event {
	if a.Err == nil {
		if f.open == nil {
			return nil
		}
		r := resolvedFailure(f.open, a.Revision, a.At, recoveredSummary(f.open.attempt))
		f.open = nil
		return []Event{r}
	}
	cur := &failure{attempt: a, ev: failureEvent(a)}
	prev := f.open
	f.open = cur
	if prev == nil || prev.ev.Cause == cur.ev.Cause {
		return []Event{cur.ev}
	}
	// The new alert first: the receiver never sees the app without an
	// open error while it fails.
	return []Event{cur.ev, resolvedFailure(prev, a.Revision, a.At, "superseded: the app now fails with another error, alerted separately: "+cur.ev.Summary)}
}

// failureEvent is the error alert of a failed attempt, its summary
// scrubbed of values by package redact.
func failureEvent(a Attempt) Event {
	summary := redact.Error(a.Err)
	if a.Stage == reconcile.StageSource {
		summary += "; the last good revision stays applied: nothing is applied or pruned until the source answers"
	}
	return Event{Type: EventError, App: a.App, Revision: a.Revision, Time: a.At, Cause: failureCause(a), Summary: summary}
}

// resolvedFailure is the resolution of an open failure, at revision
// (when known) and time at.
func resolvedFailure(open *failure, revision string, at time.Time, summary string) Event {
	r := open.ev
	r.Resolved, r.Time, r.Summary = true, at, summary
	if revision != "" {
		r.Revision = revision
	}
	return r
}

// recoveredSummary says what ended a failure: its source answered, or
// the app reconciled.
func recoveredSummary(a Attempt) string {
	if name := failedSource(a.Err); name != "" && a.Stage == reconcile.StageSource {
		return fmt.Sprintf("source %s answers again; app %s follows it again", name, a.App)
	}
	return "app " + a.App + " reconciles again"
}

// failureCause names what tells one failure from another: its stage;
// for a source failure the source and the kind of failure
// (source.Kind), whatever revision is in force; otherwise how the
// reconcile ended and the revision; and the driver's reason, if any. The error's text is not part of it:
// it may change between retries of the same failure (addresses,
// resourceVersions, counts).
func failureCause(a Attempt) string {
	parts := []string{"stage=" + string(a.Stage)}
	if a.Reason != "" {
		parts = append(parts, "reason="+a.Reason)
	}
	var se *source.Error
	switch {
	case errors.As(a.Err, &se):
		parts = append(parts, "source="+se.Source, "kind="+string(se.Kind))
	default:
		parts = append(parts, "result="+string(a.Result), "revision="+a.Revision)
	}
	return strings.Join(parts, " ")
}

// failedSource is the name of the source a failure is about, "" when it
// is not a source's.
func failedSource(err error) string {
	var se *source.Error
	if errors.As(err, &se) {
		return se.Source
	}
	return ""
}
