package alert

import (
	"fmt"
	"sort"
	"time"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// ConflictAlerts pairs conflict alerts with their resolutions. An apply
// reports every slice of the plan (applier.ChangeSet), so each apply
// tells, for every slice alerted as conflicting, whether it still is:
// a slice applied since (yielded, forced, or no longer contested) or
// gone from the plan resolves its alert; a slice that conflicts over
// other fields or with other managers is alerted anew and its old alert
// resolved; a slice that was skipped or failed keeps its alert open.
// It is not safe for concurrent use; a driver keeps one per app and
// calls it from the app's reconcile.
type ConflictAlerts struct {
	open map[sliceKey]Event
}

// sliceKey is one manager's slice of one object.
type sliceKey struct {
	object  planner.ObjectRef
	manager planner.FieldManager
}

// Events returns the conflict alerts of one apply of app: those opened
// and those resolved.
func (t *ConflictAlerts) Events(app string, cs *applier.ChangeSet, at time.Time) []Event {
	if cs == nil {
		return nil
	}
	var out []Event
	seen := map[sliceKey]bool{}
	next := map[sliceKey]Event{}
	for _, c := range cs.Changes {
		k := sliceKey{object: c.Object, manager: c.Manager}
		seen[k] = true
		old, wasOpen := t.open[k]
		switch {
		case len(c.Conflicts) > 0:
			ev := conflictEvent(app, cs.Revision, c, at)
			next[k] = ev
			out = append(out, ev)
			if wasOpen && dedupeKey(old) != dedupeKey(ev) {
				out = append(out, resolvedConflict(old, cs.Revision, at, "superseded: the object now conflicts over other fields or with other managers, alerted separately"))
			}
		case stillUnknown(c.Action) && wasOpen:
			next[k] = old
		case wasOpen:
			out = append(out, resolvedConflict(old, cs.Revision, at, fmt.Sprintf("%s applied as %s: no field conflict left", c.Object, c.Manager)))
		}
	}
	for _, k := range sortedSlices(t.open) {
		if !seen[k] {
			out = append(out, resolvedConflict(t.open[k], cs.Revision, at, fmt.Sprintf("%s is no longer applied as %s", k.object, k.manager)))
		}
	}
	t.open = next
	return out
}

// stillUnknown reports whether a slice's action leaves its conflicts
// undecided: it was not sent, or its request failed before the server
// judged ownership.
func stillUnknown(a applier.Action) bool {
	return a == applier.Skipped || a == applier.Failed
}

// conflictEvent is the alert of a slice blocked by field conflicts.
func conflictEvent(app, revision string, c applier.Change, at time.Time) Event {
	ev := Event{Type: EventConflict, App: app, Revision: revision, Object: objectRef(c.Object), Time: at,
		Summary: fmt.Sprintf("%s not applied as %s: fields owned by another manager", c.Object, c.Manager)}
	for _, k := range c.Conflicts {
		ev.Fields = append(ev.Fields, conflictField(k))
	}
	return ev
}

// conflictField is one conflicting field: its path and the manager that
// owns it, as the API server named them, with the time it wrote the
// field when the server said.
func conflictField(k applier.Conflict) Field {
	f := Field{Path: k.Path, Class: "conflict", Culprit: Culprit{Manager: k.Manager, Operation: k.Operation, Subresource: k.Subresource}}
	if t, err := time.Parse(time.RFC3339, k.Time); err == nil {
		f.Culprit.Time = t
	}
	return f
}

// resolvedConflict is the resolution of an open conflict alert.
func resolvedConflict(open Event, revision string, at time.Time, summary string) Event {
	open.Resolved, open.Time, open.Summary = true, at, summary
	if revision != "" {
		open.Revision = revision
	}
	return open
}

// sortedSlices returns the keys of open in a stable order, so the
// resolutions of one apply are sent in the same order every time.
func sortedSlices(open map[sliceKey]Event) []sliceKey {
	keys := make([]sliceKey, 0, len(open))
	for k := range open {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		a, b := keys[i], keys[j]
		if a.object.String() != b.object.String() {
			return a.object.String() < b.object.String()
		}
		return a.manager < b.manager
	})
	return keys
}
