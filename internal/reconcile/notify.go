package reconcile

import (
	"encoding/json"
	"fmt"
	"time"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/planner"
)

// driftEvent turns a drift watcher change into alert events: one for the
// new findings and one for the resolved ones of the object.
func driftEvents(ch drift.Change, revision string) []alert.Event {
	var out []alert.Event
	for _, group := range []struct {
		findings []drift.Finding
		resolved bool
	}{{ch.New, false}, {ch.Resolved, true}} {
		var fields []alert.Field
		var obj drift.Object
		for _, f := range group.findings {
			if !f.Class.IsDrift() {
				continue
			}
			obj = f.Object
			fields = append(fields, alertField(f))
		}
		if len(fields) == 0 {
			continue
		}
		summary := fmt.Sprintf("%d field(s) of %s %s/%s drifted from Git", len(fields), obj.Kind, obj.Namespace, obj.Name)
		if group.resolved {
			summary = fmt.Sprintf("%s %s/%s matches Git again", obj.Kind, obj.Namespace, obj.Name)
		}
		out = append(out, alert.Event{
			Type:     config.EventDrift,
			App:      ch.App,
			Revision: revision,
			Object:   alert.ObjectRef{APIVersion: obj.APIVersion, Kind: obj.Kind, Namespace: obj.Namespace, Name: obj.Name},
			Summary:  summary,
			Fields:   fields,
			Resolved: group.resolved,
			Time:     ch.At,
		})
	}
	return out
}

func alertField(f drift.Finding) alert.Field {
	af := alert.Field{Path: f.Path, Class: string(f.Class), Desired: valueString(f.Desired), Live: valueString(f.Live), Sensitive: f.Redacted}
	for _, o := range f.Owners {
		if o.Manager != f.Culprit {
			continue
		}
		af.Culprit = alert.Culprit{Manager: o.Manager, Operation: o.Operation, Subresource: o.Subresource}
		if o.Time != nil {
			af.Culprit.Time = *o.Time
		}
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

// changeSetEvents turns an apply's outcome into alert events: conflicts,
// handoffs held, and one sync event when anything was written.
func changeSetEvents(app string, cs *applier.ChangeSet, at time.Time) []alert.Event {
	var out []alert.Event
	written := 0
	for _, c := range cs.Changes {
		ref := objectRef(c.Object)
		switch {
		case len(c.Conflicts) > 0:
			ev := alert.Event{Type: config.EventConflict, App: app, Revision: cs.Revision, Object: ref, Time: at,
				Summary: fmt.Sprintf("%s not applied as %s: fields owned by another manager", c.Object, c.Manager)}
			for _, k := range c.Conflicts {
				ev.Fields = append(ev.Fields, alert.Field{Path: k.Path, Class: "conflict", Culprit: alert.Culprit{Manager: k.Manager, Operation: k.Operation, Subresource: k.Subresource}})
			}
			out = append(out, ev)
		case len(c.Held) > 0:
			ev := alert.Event{Type: config.EventHandoff, App: app, Revision: cs.Revision, Object: ref, Time: at,
				Summary: fmt.Sprintf("%s: fields %s left Git; held at their live value by %s until another manager owns them", c.Object, c.Manager, applier.HandoffManager(c.Manager))}
			for _, p := range c.Held {
				ev.Fields = append(ev.Fields, alert.Field{Path: p, Class: "handoff-pending"})
			}
			out = append(out, ev)
		}
		switch c.Action {
		case applier.Created, applier.Configured, applier.Forced, applier.Yielded, applier.Recreated:
			written++
		}
	}
	if written > 0 {
		out = append(out, alert.Event{Type: config.EventSync, App: app, Revision: cs.Revision, Time: at,
			Summary: fmt.Sprintf("app %s synced to %s: %d object slice(s) written", app, cs.Revision, written)})
	}
	return out
}

func objectRef(r planner.ObjectRef) alert.ObjectRef {
	return alert.ObjectRef{APIVersion: r.GVK().GroupVersion().String(), Kind: r.Kind, Namespace: r.Namespace, Name: r.Name}
}
