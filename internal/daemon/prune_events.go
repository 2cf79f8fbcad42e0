package daemon

import (
	"fmt"
	"log/slog"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// PruneStatus is an app's last prune that removed or refused something,
// as /status shows it. A prune with nothing to do leaves it as it was.
type PruneStatus struct {
	Time     time.Time `json:"time"`
	Revision string    `json:"revision,omitempty"`
	// Deleted and Orphaned count the objects removed from the app.
	Deleted  int `json:"deleted"`
	Orphaned int `json:"orphaned"`
	// Kept counts the objects that left Git and that prune kept in the
	// cluster on request (prune: disabled), dropped from the inventory.
	Kept int `json:"kept,omitempty"`
	// Spared counts the objects that left Git and stay (refused, or
	// spared one by one by a guard).
	Spared int `json:"spared,omitempty"`
	// Refused is set when a guard refused the whole prune; Reason names
	// the guard (inventory.Reason: budget, apply-incomplete, empty-render,
	// disabled, forbidden) and Message says why, scrubbed of values.
	Refused bool   `json:"refused,omitempty"`
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
}

// pruneOutcome is what a prune report is worth telling.
type pruneOutcome int

const (
	// pruneQuiet: nothing removed, nothing refused (or a dry run).
	pruneQuiet pruneOutcome = iota
	// pruneRemoved: objects were deleted or orphaned, or dropped from
	// the inventory and kept in the cluster on request.
	pruneRemoved
	// pruneRefused: a guard kept objects that left Git.
	pruneRefused
	// pruneDisabled: the app sets prune: false and objects left Git. It is
	// the app's choice, not a fault: shown in /status, never alerted.
	pruneDisabled
)

// classifyPrune decides what a prune report is worth telling.
func classifyPrune(rep *inventory.Report) pruneOutcome {
	switch {
	case rep == nil || rep.DryRun:
		return pruneQuiet
	case rep.Refused != nil && rep.Refused.Reason == inventory.ReasonDisabled:
		return pruneDisabled
	case rep.Refused != nil && len(rep.Spared) > 0:
		return pruneRefused
	case len(rep.Deleted)+len(rep.Orphaned)+len(rep.Kept) > 0:
		return pruneRemoved
	}
	return pruneQuiet
}

// reportPrune makes one prune visible: the log line, the prune alert, a
// Pruned (Normal) or PruneRefused (Warning) Event on the inventory parent,
// and lastPrune in /status. None of them carries an object's values:
// objects are named, and the guard's message is scrubbed (package redact).
func (a *appRun) reportPrune(log *slog.Logger, rev source.Revision, rep *inventory.Report) {
	if rep == nil {
		return
	}
	outcome := classifyPrune(rep)
	if outcome == pruneRefused {
		log.Warn(rep.String(), "reason", string(rep.Refused.Reason))
	} else {
		log.Info(rep.String())
	}
	if outcome == pruneQuiet {
		return
	}
	now := a.d.opts.Clock.Now()
	st := pruneStatus(rev, rep, now)
	a.d.setStatus(a.app.Name, func(s *AppStatus) { s.LastPrune = st })
	switch outcome {
	case pruneRemoved:
		a.d.event(a.app, corev1.EventTypeNormal, removedReason(rep), "revision %s: %s", reconcile.ShortSHA(rev.SHA), removedText(rep))
	case pruneRefused:
		a.d.event(a.app, corev1.EventTypeWarning, "PruneRefused", "revision %s: %d object(s) that left Git stay (guard %s): %s", reconcile.ShortSHA(rev.SHA), len(rep.Spared), rep.Refused.Reason, rep.Refused.Message)
	default:
		return
	}
	a.notify(pruneEvent(a.app.Name, rev.SHA, rep, outcome, now))
}

// removedReason is the Event reason of a prune that removed objects from
// the app: Pruned, or PruneKept when every one of them was kept in the
// cluster on request (nothing was deleted or orphaned).
func removedReason(rep *inventory.Report) string {
	if len(rep.Deleted)+len(rep.Orphaned) == 0 {
		return "PruneKept"
	}
	return "Pruned"
}

// pruneStatus is /status lastPrune for a report.
func pruneStatus(rev source.Revision, rep *inventory.Report, at time.Time) *PruneStatus {
	st := &PruneStatus{Time: at, Revision: rev.SHA, Deleted: len(rep.Deleted), Orphaned: len(rep.Orphaned), Kept: len(rep.Kept), Spared: len(rep.Spared)}
	if rep.Refused != nil {
		st.Refused, st.Reason, st.Message = true, string(rep.Refused.Reason), redact.Text(rep.Refused.Message)
	}
	return st
}

// pruneEvent is the prune alert of a report: one app-wide event whose
// fields are the objects concerned, each with the object as path and
// "deleted", "orphaned", "kept", "spared" or "refused" as class, so a new set of
// objects at the same revision is a new alert.
func pruneEvent(app, revision string, rep *inventory.Report, outcome pruneOutcome, at time.Time) alert.Event {
	ev := alert.Event{Type: alert.EventPrune, App: app, Revision: revision, Time: at}
	add := func(class string, refs ...planner.ObjectRef) {
		for _, r := range refs {
			ev.Fields = append(ev.Fields, alert.Field{Path: objectRef(r).String(), Class: class})
		}
	}
	if outcome == pruneRefused {
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
	ev.Summary = fmt.Sprintf("app %s pruned what left Git: %s", app, removedText(rep))
	return ev
}

// maxNamed is how many objects an Event message names before "and N more".
const maxNamed = 10

// removedText says what a prune removed: "1 deleted (v1 ConfigMap ns/a), 1
// orphaned (…)", with the spared count when some stayed.
func removedText(rep *inventory.Report) string {
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
