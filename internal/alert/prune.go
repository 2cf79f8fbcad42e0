package alert

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
)

// PruneOutcome is what a prune report is worth telling.
type PruneOutcome int

const (
	// PruneQuiet: nothing removed, nothing refused (or a dry run).
	PruneQuiet PruneOutcome = iota
	// PruneRemoved: objects were deleted or orphaned, or dropped from
	// the inventory and kept in the cluster on request.
	PruneRemoved
	// PruneRefused: a guard kept objects that left Git.
	PruneRefused
	// PruneDisabled: the app sets prune: false and objects left Git. It is
	// the app's choice, not a fault: shown in /status, never alerted.
	PruneDisabled
)

// ClassifyPrune decides what a prune report is worth telling.
func ClassifyPrune(rep *inventory.Report) PruneOutcome {
	switch {
	case rep == nil || rep.DryRun:
		return PruneQuiet
	case rep.Refused != nil && rep.Refused.Reason == inventory.ReasonDisabled:
		return PruneDisabled
	case rep.Refused != nil && len(rep.Spared) > 0:
		return PruneRefused
	case len(rep.Deleted)+len(rep.Orphaned)+len(rep.Kept) > 0:
		return PruneRemoved
	}
	return PruneQuiet
}

// PruneEvent is the prune alert of a report: one app-wide event whose
// fields are the objects concerned, each with the object as path and
// "deleted", "orphaned", "kept", "spared" or "refused" as class, so a new set of
// objects at the same revision is a new alert.
func PruneEvent(app, revision string, rep *inventory.Report, outcome PruneOutcome, at time.Time) Event {
	ev := Event{Type: EventPrune, App: app, Revision: revision, Time: at}
	add := func(class string, refs ...planner.ObjectRef) {
		for _, r := range refs {
			ev.Fields = append(ev.Fields, Field{Path: objectRef(r).String(), Class: class})
		}
	}
	if outcome == PruneRefused {
		for _, s := range rep.Spared {
			add("refused", s.Object)
		}
		ev.Summary = redact.Sprintf("prune of app %s refused (guard %s): %d object(s) that left Git stay: %s", app, rep.Refused.Reason, len(rep.Spared), rep.Refused.Message)
		return ev
	}
	add("deleted", rep.Deleted...)
	add("orphaned", rep.Orphaned...)
	for _, k := range rep.Kept {
		add("kept", k.Object)
	}
	for _, s := range rep.Spared {
		add("spared", s.Object)
	}
	ev.Summary = fmt.Sprintf("app %s pruned what left Git: %s", app, RemovedText(rep))
	return ev
}

// maxNamed is how many objects an Event message names before "and N more".
const maxNamed = 10

// RemovedText says what a prune removed: "1 deleted (v1 ConfigMap ns/a), 1
// orphaned (…)", with the spared count when some stayed.
func RemovedText(rep *inventory.Report) string {
	var parts []string
	for _, g := range []struct {
		verb string
		refs []planner.ObjectRef
	}{{"deleted", rep.Deleted}, {"orphaned", rep.Orphaned}} {
		if len(g.refs) > 0 {
			parts = append(parts, fmt.Sprintf("%d %s (%s)", len(g.refs), g.verb, namedRefs(g.refs)))
		}
	}
	if len(rep.Kept) > 0 {
		kept := make([]planner.ObjectRef, len(rep.Kept))
		for i, k := range rep.Kept {
			kept[i] = k.Object
		}
		parts = append(parts, fmt.Sprintf("%d kept in the cluster and dropped from the inventory, prune disabled on the object (%s)", len(kept), namedRefs(kept)))
	}
	if n := len(rep.Spared); n > 0 {
		parts = append(parts, fmt.Sprintf("%d spared", n))
	}
	return strings.Join(parts, ", ")
}

// namedRefs lists up to maxNamed objects.
func namedRefs(refs []planner.ObjectRef) string {
	names := make([]string, 0, min(len(refs), maxNamed))
	for i, r := range refs {
		if i == maxNamed {
			names = append(names, fmt.Sprintf("and %d more", len(refs)-maxNamed))
			break
		}
		names = append(names, objectRef(r).String())
	}
	return strings.Join(names, ", ")
}

// PruneEventText is the Kubernetes Event both drivers record for a prune
// report at revision short: Normal Pruned (or PruneKept, when every
// object that left was kept on request) naming the objects, or Warning
// PruneRefused naming the guard; ok is false when the report is worth no
// Event. The message is not scrubbed: the caller's recorder does that.
func PruneEventText(short string, rep *inventory.Report) (eventType, reason, message string, ok bool) {
	switch ClassifyPrune(rep) {
	case PruneRemoved:
		reason = "Pruned"
		if len(rep.Deleted)+len(rep.Orphaned) == 0 {
			reason = "PruneKept"
		}
		return corev1.EventTypeNormal, reason, reconcile.RevisionPrefix(short) + RemovedText(rep), true
	case PruneRefused:
		return corev1.EventTypeWarning, "PruneRefused", fmt.Sprintf("%s%d object(s) that left Git stay (guard %s): %s", reconcile.RevisionPrefix(short), len(rep.Spared), rep.Refused.Reason, rep.Refused.Message), true
	}
	return "", "", "", false
}
