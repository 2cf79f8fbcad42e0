package daemon

import (
	"log/slog"
	"time"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/inventory"
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

// reportPrune makes one prune visible: the log line, the prune alert, a
// Pruned (Normal) or PruneRefused (Warning) Event on the inventory parent,
// and lastPrune in /status. None of them carries an object's values:
// objects are named, and the guard's message is scrubbed (package redact).
func (a *appRun) reportPrune(log *slog.Logger, rev source.Revision, rep *inventory.Report) {
	if rep == nil {
		return
	}
	outcome := alert.ClassifyPrune(rep)
	if outcome == alert.PruneRefused {
		log.Warn(rep.String(), "reason", string(rep.Refused.Reason))
	} else {
		log.Info(rep.String())
	}
	if outcome == alert.PruneQuiet {
		return
	}
	now := a.d.opts.Clock.Now()
	st := pruneStatus(rev, rep, now)
	a.d.setStatus(a.app.Name, func(s *AppStatus) { s.LastPrune = st })
	eventType, reason, msg, ok := alert.PruneEventText(reconcile.ShortSHA(rev.SHA), rep)
	if !ok {
		return
	}
	a.d.event(a.app, eventType, reason, "%s", msg)
	a.notify(alert.PruneEvent(a.app.Name, rev.SHA, rep, outcome, now))
}

// pruneStatus is /status lastPrune for a report.
func pruneStatus(rev source.Revision, rep *inventory.Report, at time.Time) *PruneStatus {
	st := &PruneStatus{Time: at, Revision: rev.SHA, Deleted: len(rep.Deleted), Orphaned: len(rep.Orphaned), Kept: len(rep.Kept), Spared: len(rep.Spared)}
	if rep.Refused != nil {
		st.Refused, st.Reason, st.Message = true, string(rep.Refused.Reason), redact.Text(rep.Refused.Message)
	}
	return st
}
