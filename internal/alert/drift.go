package alert

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// DriftAlerts pairs drift alerts with their resolutions. A sink matches a
// resolution to the alert with the same set of fields, so findings alerted
// together (one Change) are remembered as one group and always resolved as
// that group, with the fields that were alerted — even when they clear one
// by one or together with findings alerted in another group. When some
// findings of a group clear and others remain, the group is resolved and
// the remaining findings are alerted again as a new group, so every
// alerted finding gets a resolved alert when it goes away.
type DriftAlerts struct {
	open map[drift.Object][]*alertGroup // by Finding.Key().Object
}

// alertGroup is the drift findings of one object alerted in one event.
type alertGroup struct {
	findings []drift.Finding // as alerted
}

// Events returns the alert events of one watcher change: resolutions of
// the groups it clears (wholly or partly), the remainder of partly
// cleared groups, and one event for the new drift findings.
func (t *DriftAlerts) Events(ch drift.Delta) []Event {
	if t.open == nil {
		t.open = map[drift.Object][]*alertGroup{}
	}
	revision := ch.Revision
	if i := strings.LastIndex(revision, "@"); i >= 0 {
		revision = revision[i+1:] // "tag@sha": alerts name the commit
	}
	var out []Event
	gone := map[drift.Key]bool{}
	var obj drift.Object
	for _, f := range ch.Resolved {
		if f.Class.IsDrift() {
			gone[f.Key()] = true
			obj = f.Key().Object
		}
	}
	if len(gone) > 0 {
		var keep []*alertGroup
		for _, g := range t.open[obj] {
			var left []drift.Finding
			for _, f := range g.findings {
				if !gone[f.Key()] {
					left = append(left, f)
				}
			}
			if len(left) == len(g.findings) {
				keep = append(keep, g)
				continue
			}
			ev := findingEvent(ch, revision, g.findings, true)
			if len(left) > 0 {
				o := g.findings[0].Object
				ev.Summary = fmt.Sprintf("%d of the %d field(s) of %s %s/%s alerted together match Git again; the others are alerted anew", len(g.findings)-len(left), len(g.findings), o.Kind, o.Namespace, o.Name)
			}
			out = append(out, ev)
			if len(left) > 0 {
				keep = append(keep, &alertGroup{findings: left})
				out = append(out, findingEvent(ch, revision, left, false))
			}
		}
		t.open[obj] = keep
	}
	var added []drift.Finding
	for _, f := range ch.New {
		if f.Class.IsDrift() {
			added = append(added, f)
		}
	}
	if len(added) > 0 {
		k := added[0].Key().Object
		t.open[k] = append(t.open[k], &alertGroup{findings: added})
		out = append(out, findingEvent(ch, revision, added, false))
	}
	for k, gs := range t.open {
		if len(gs) == 0 {
			delete(t.open, k)
		}
	}
	return out
}

// findingEvent is the alert event of drift findings of one object: open, or
// resolved (findings are then those that were alerted).
func findingEvent(ch drift.Delta, revision string, findings []drift.Finding, resolved bool) Event {
	obj := findings[0].Object
	fields := make([]Field, 0, len(findings))
	for _, f := range findings {
		fields = append(fields, alertField(f))
	}
	summary := fmt.Sprintf("%d field(s) of %s %s/%s drifted from Git", len(fields), obj.Kind, obj.Namespace, obj.Name)
	if resolved {
		summary = resolvedSummary(ch, findings)
	}
	return Event{
		Type:     EventDrift,
		App:      ch.App,
		Revision: revision,
		Object:   ObjectRef{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name},
		Summary:  summary,
		Fields:   fields,
		Resolved: resolved,
		Time:     ch.At,
	}
}

// resolvedSummary says why the drift of findings (one object's) is
// resolved: the fields match Git again, or, when every one of them is now
// left by the conflict policy to the manager that took it (a yielded
// finding of the same field in ch.New), that they are yielded to it.
func resolvedSummary(ch drift.Delta, findings []drift.Finding) string {
	obj := findings[0].Object
	yieldedTo := map[string]string{} // path → manager
	for _, f := range ch.New {
		if f.Class == drift.Yielded && f.Object == obj {
			yieldedTo[f.Path] = f.Culprit
		}
	}
	var to []string
	for _, f := range findings {
		m, ok := yieldedTo[f.Path]
		if !ok {
			return fmt.Sprintf("%s %s/%s matches Git again", obj.Kind, obj.Namespace, obj.Name)
		}
		if m != "" && !slices.Contains(to, m) {
			to = append(to, m)
		}
	}
	if len(to) == 0 {
		return fmt.Sprintf("%s %s/%s: no drift left, its field(s) are now yielded by the conflict policy", obj.Kind, obj.Namespace, obj.Name)
	}
	slices.Sort(to)
	return fmt.Sprintf("%s %s/%s: no drift left, its field(s) are now yielded to %s by the conflict policy", obj.Kind, obj.Namespace, obj.Name, strings.Join(to, ", "))
}

func alertField(f drift.Finding) Field {
	af := Field{Path: f.Path, FieldPath: f.FieldPath, Class: string(f.Class), Desired: valueString(f.Desired), Live: valueString(f.Live), Sensitive: f.Redacted}
	for _, o := range f.Owners {
		if o.Manager != f.Culprit {
			continue
		}
		af.Culprit = Culprit{Manager: o.Manager, Operation: o.Operation, Subresource: o.Subresource}
		if o.Time != nil {
			af.Culprit.Time = *o.Time
		}
	}
	if af.Culprit.Manager == "" && f.Culprit != "" {
		// A flapping field's culprit is the other side of the fight,
		// which need not own the field at this moment (syncd may have
		// just forced it back): name it without an entry's details.
		af.Culprit.Manager = f.Culprit
	}
	return af
}

// valueString renders a field value for a chat message ("" when absent).
func valueString(v any) string {
	switch x := v.(type) {
	case nil:
		return ""
	case string:
		return x
	}
	b, err := json.Marshal(v)
	if err != nil {
		return fmt.Sprint(v)
	}
	return string(b)
}

// ChangeSetEvents turns an apply's outcome into alert events: handoffs
// held, and one sync event when anything was written. Conflicts are
// ConflictAlerts', which pairs them with their resolutions.
func ChangeSetEvents(app string, cs *applier.ChangeSet, at time.Time) []Event {
	var out []Event
	written := 0
	for _, c := range cs.Changes {
		if held := c.Resolution().Held; len(held) > 0 && len(c.Conflicts) == 0 {
			ev := Event{Type: EventHandoff, App: app, Revision: cs.Revision, Object: objectRef(c.Object), Time: at,
				Summary: fmt.Sprintf("%s: fields %s left Git; held at their live value by %s until another manager owns them", c.Object, c.Manager, ownership.HandoffManager(c.Manager))}
			for _, p := range held {
				ev.Fields = append(ev.Fields, Field{Path: p, Class: "handoff-pending"})
			}
			out = append(out, ev)
		}
		if c.Wrote() {
			written++
		}
	}
	if written > 0 {
		out = append(out, Event{Type: EventSync, App: app, Revision: cs.Revision, Time: at,
			Summary: fmt.Sprintf("app %s synced to %s: %d object slice(s) written", app, cs.Revision, written)})
	}
	return out
}

func objectRef(r planner.ObjectRef) ObjectRef {
	return ObjectRef{APIVersion: r.GVK().GroupVersion().String(), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}
