package alert

import (
	"fmt"
	"strings"

	"syncd.dev/syncd/internal/drift"
)

// OverlapAlerts turns the drift watcher's Overlap findings into one
// overlap alert per object and other app when the first of its fields
// appears, and one resolved alert, with the same fields, when the last
// one is gone. Overlaps are never drift alerts.
type OverlapAlerts struct {
	open map[overlapKey]*overlapGroup
}

// overlapKey is one object shared with one other app.
type overlapKey struct {
	object drift.Object // as drift.Key has it: the group, not the version
	other  string
}

// overlapGroup is what is open for one overlapKey: the findings seen
// (by key) and the event that was alerted.
type overlapGroup struct {
	seen    map[drift.Key]bool
	alerted Event
}

// keyOfOverlap returns the overlapKey of an Overlap finding.
func keyOfOverlap(f drift.Finding) overlapKey {
	return overlapKey{object: f.Key().Object, other: f.OtherApp}
}

// Events returns the overlap alerts of one watcher change.
func (t *OverlapAlerts) Events(ch drift.Delta) []Event {
	if t.open == nil {
		t.open = map[overlapKey]*overlapGroup{}
	}
	var out []Event
	for _, f := range ch.Resolved {
		if f.Class != drift.Overlap {
			continue
		}
		k := keyOfOverlap(f)
		g := t.open[k]
		if g == nil {
			continue
		}
		delete(g.seen, f.Key())
		if len(g.seen) == 0 {
			ev := g.alerted
			ev.Resolved, ev.Time = true, ch.At
			ev.Summary = fmt.Sprintf("%s is no longer declared by both app %s and app %s", f.Object, ch.App, f.OtherApp)
			out = append(out, ev)
			delete(t.open, k)
		}
	}
	var fresh []drift.Finding
	for _, f := range ch.New {
		if f.Class != drift.Overlap {
			continue
		}
		if g := t.open[keyOfOverlap(f)]; g != nil {
			g.seen[f.Key()] = true
			continue
		}
		fresh = append(fresh, f)
	}
	for _, o := range drift.OverlapsOf(fresh) {
		k := overlapKey{object: groupObject(o.Object), other: o.OtherApp}
		g := &overlapGroup{seen: map[drift.Key]bool{}, alerted: overlapEvent(ch, o, fresh)}
		for _, f := range fresh {
			if keyOfOverlap(f) == k {
				g.seen[f.Key()] = true
			}
		}
		t.open[k] = g
		out = append(out, g.alerted)
	}
	return out
}

// groupObject is o as drift.Key has it (the API group without the
// version).
func groupObject(o drift.Object) drift.Object {
	o.APIVersion = drift.Finding{Object: o}.Key().Object.APIVersion
	return o
}

// overlapEvent is the open overlap alert of o, with the fields of
// findings it counts.
func overlapEvent(ch drift.Delta, o drift.ObjectOverlap, findings []drift.Finding) Event {
	revision := ch.Revision
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		revision = revision[i+1:]
	}
	var fields []Field
	for _, f := range findings {
		if f.OtherApp == o.OtherApp && f.Key().Object == groupObject(o.Object) {
			fields = append(fields, alertField(f))
		}
	}
	return Event{
		Type:     EventOverlap,
		App:      ch.App,
		Revision: revision,
		Object:   ObjectRef{APIVersion: o.Object.APIVersion, Kind: o.Object.Kind, Namespace: o.Object.Namespace, Name: o.Object.Name},
		Summary:  "overlap: " + o.Sentence() + "; information, not drift",
		Fields:   fields,
		Time:     ch.At,
	}
}
