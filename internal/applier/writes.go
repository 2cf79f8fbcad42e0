package applier

import (
	"fmt"
	"strings"
)

// Writes counts the slices of a ChangeSet the API server wrote
// (Change.Wrote), by action: what an apply wrote, as the drivers' Synced
// Events, the history of applies and the sync alerts say it. A forced,
// yielded or handed-off slice counts only when the server wrote it.
type Writes struct {
	Created    int `json:"created,omitempty"`
	Recreated  int `json:"recreated,omitempty"`
	Configured int `json:"configured,omitempty"`
	// Forced slices took fields from another manager (conflict policy
	// force); Yielded ones were written without the fields left to
	// another manager; HandedOff ones dropped fields held for a
	// handoff.
	Forced    int `json:"forced,omitempty"`
	Yielded   int `json:"yielded,omitempty"`
	HandedOff int `json:"handedOff,omitempty"`
}

// Writes counts what the API server wrote for the change set (nil: nothing).
func (cs *ChangeSet) Writes() Writes {
	var w Writes
	if cs == nil {
		return w
	}
	for i := range cs.Changes {
		w.add(cs.Changes[i])
	}
	return w
}

// add counts one change if the server wrote it.
func (w *Writes) add(c Change) {
	if !c.Wrote() {
		return
	}
	switch c.Action {
	case Created:
		w.Created++
	case Recreated:
		w.Recreated++
	case Configured:
		w.Configured++
	case Forced:
		w.Forced++
	case Yielded:
		w.Yielded++
	case HandoffPending:
		w.HandedOff++
	}
}

// Total is how many slices the server wrote.
func (w Writes) Total() int {
	return w.Created + w.Recreated + w.Configured + w.Forced + w.Yielded + w.HandedOff
}

// String says what was written: "2 created, 1 configured", followed by
// the other writes that happened ("1 forced").
func (w Writes) String() string {
	s := fmt.Sprintf("%d created, %d configured", w.Created, w.Configured)
	if others := w.Others(); others != "" {
		s += ", " + others
	}
	return s
}

// Others says the writes besides created and configured ("1 recreated,
// 1 forced"); "" when there were none.
func (w Writes) Others() string {
	var parts []string
	for _, p := range []struct {
		n    int
		verb string
	}{{w.Recreated, "recreated"}, {w.Forced, "forced"}, {w.Yielded, "yielded"}, {w.HandedOff, "handed off"}} {
		if p.n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", p.n, p.verb))
		}
	}
	return strings.Join(parts, ", ")
}
