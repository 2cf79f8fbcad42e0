package leader

import (
	"log/slog"
	"time"
)

// EventKind is what happened to a replica in the election.
type EventKind string

// The kinds of Event, in the order a term may see them.
const (
	// NewLeader: another replica holds the Lease (Event.Leader).
	NewLeader EventKind = "NewLeader"
	// LayoutBlocked: this replica holds its Lease but waits while the
	// Leases of another shard layout are renewed (Event.Blocking).
	LayoutBlocked EventKind = "LayoutBlocked"
	// LayoutCheckFailed: the Leases could not be listed (Event.Err); the
	// check is retried every RetryPeriod.
	LayoutCheckFailed EventKind = "LayoutCheckFailed"
	// Started: this replica holds the Lease and starts the work.
	Started EventKind = "Started"
	// Draining: the caller's context ended; the work is told to stop and
	// waited for, up to the grace period (Event.Duration).
	Draining EventKind = "Draining"
	// Drained: the work stopped after Event.Duration; the Lease is
	// released.
	Drained EventKind = "Drained"
	// Undrained: the work outlived the grace period (Event.Duration);
	// Run returns ErrUndrained and the Lease is left to expire.
	Undrained EventKind = "Undrained"
	// StoppedLeading: client-go's elector stopped (released, lost, or
	// a standby stopped).
	StoppedLeading EventKind = "StoppedLeading"
	// Released: the caller's context ended and the work had already
	// stopped; the Lease is released.
	Released EventKind = "Released"
	// Lost: the Lease was not renewed in time; the work is told to stop
	// and waited for at most Event.Duration.
	Lost EventKind = "Lost"
	// LostUndrained: the work did not stop before another replica may
	// hold the Lease; Run returns ErrLeaseLost without waiting longer.
	LostUndrained EventKind = "LostUndrained"
	// Withdrew: the work returned on its own (Event.Err); the Lease was
	// released and the replica is Withdrawn.
	Withdrew EventKind = "Withdrew"
	// CandidateAgain: Options.Runnable allows it; the replica is a
	// candidate again.
	CandidateAgain EventKind = "CandidateAgain"
)

// Event is one thing that happened to a replica in the election.
type Event struct {
	Kind EventKind
	// Lease is the Lease, namespace/name.
	Lease string
	// Identity is this replica's holder identity.
	Identity string
	// Leader is the other holder (NewLeader).
	Leader string
	// Err is why (Withdrew, LayoutCheckFailed).
	Err error
	// Duration is the grace period (Draining, Undrained), the time
	// waited (Drained) or the wait allowed after a loss (Lost).
	Duration time.Duration
	// Blocking are the other layout's Leases and holders (LayoutBlocked).
	Blocking string
}

// eventText is how an Event reads in a log.
type eventText struct {
	level   slog.Level
	message string
	// durationKey names Event.Duration in Attrs ("": not used).
	durationKey string
}

var eventTexts = map[EventKind]eventText{
	NewLeader:         {slog.LevelInfo, "another replica leads; waiting warm", ""},
	LayoutBlocked:     {slog.LevelWarn, "holding the Lease but waiting: another shard layout still runs; it stops when these Leases are released or expire", ""},
	LayoutCheckFailed: {slog.LevelWarn, "shard layout check failed; retrying", ""},
	Started:           {slog.LevelInfo, "leading: applying", ""},
	Draining:          {slog.LevelInfo, "stopping: no new work; waiting for the objects in flight before releasing the Lease", "gracePeriod"},
	Drained:           {slog.LevelInfo, "in-flight work ended; the Lease is released", "waited"},
	Undrained:         {slog.LevelError, "in-flight work did not end within the shutdown grace period; exiting without releasing the Lease, which another replica takes once it expires", "gracePeriod"},
	StoppedLeading:    {slog.LevelInfo, "not leading", ""},
	Released:          {slog.LevelInfo, "stopped; the Lease is released", ""},
	Lost:              {slog.LevelError, "lost the Lease: stopping", "waitForInFlight"},
	LostUndrained:     {slog.LevelError, "in-flight work did not end before another replica may hold the Lease; exiting", ""},
	Withdrew:          {slog.LevelError, "won the Lease but cannot run; released it", ""},
	CandidateAgain:    {slog.LevelInfo, "a candidate for the Lease again", ""},
}

// Level is how serious the event is, for a log.
func (e Event) Level() slog.Level { return eventTexts[e.Kind].level }

// Message is the event as a sentence, for a log.
func (e Event) Message() string {
	if t, ok := eventTexts[e.Kind]; ok {
		return t.message
	}
	return string(e.Kind)
}

// Attrs are the event's fields as slog key/value pairs, the zero ones
// left out.
func (e Event) Attrs() []any {
	attrs := []any{"lease", e.Lease, "identity", e.Identity}
	if e.Leader != "" {
		attrs = append(attrs, "leader", e.Leader)
	}
	if e.Err != nil {
		attrs = append(attrs, "error", e.Err)
	}
	if key := eventTexts[e.Kind].durationKey; key != "" {
		attrs = append(attrs, key, e.Duration.String())
	}
	if e.Blocking != "" {
		attrs = append(attrs, "otherLayout", e.Blocking)
	}
	return attrs
}
