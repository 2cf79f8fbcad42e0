package reconcile

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// Rewind is a revision that does not descend from the one the app's
// inventory records as last applied and pruned: a force-push that rewound
// the branch, a tag moved to another line, a commit pin set back, or a
// history that cannot be read far enough to tell.
type Rewind struct {
	// From is the revision last applied and pruned, To this run's.
	From, To string
	// Ancestry is AncestryDiverged or AncestryUnknown.
	Ancestry source.Ancestry
	// Cause says why the ancestry is unknown, when an error said so.
	Cause string
	// Allowed is set when the app sets allowRewinds: the prune runs.
	Allowed bool
}

// RewindStatus is what /status shows of a rewind while it holds.
type RewindStatus struct {
	From     string    `json:"from"`
	To       string    `json:"to"`
	Ancestry string    `json:"ancestry"`
	Allowed  bool      `json:"allowed,omitempty"`
	Since    time.Time `json:"since"`
}

// what says what happened, in one sentence.
func (rw *Rewind) what() string {
	if rw.Ancestry == source.AncestryUnknown {
		s := fmt.Sprintf("revision %s cannot be shown to descend from %s, the revision last applied and pruned (its history could not be read", shortSHA(rw.To), shortSHA(rw.From))
		if rw.Cause != "" {
			s += ": " + rw.Cause
		}
		return s + ")"
	}
	return fmt.Sprintf("revision %s does not descend from %s, the revision last applied and pruned (a force-push that rewound the ref, or a rollback)", shortSHA(rw.To), shortSHA(rw.From))
}

// refusal is the prune refusal's message.
func (rw *Rewind) refusal(app string) string {
	return fmt.Sprintf("not pruning: %s; it is applied, but nothing the dropped commits added is deleted: push on top of %s, or set allowRewinds: true on app %s if the rewind is intended", rw.what(), shortSHA(rw.From), app)
}

// checkRewind compares the revision a run applies with the one the
// inventory records. An app with allowRewinds gets the rewind reported and
// pruned; any other has its prune refused (inventory.ReasonRewound).
func (r *Runner) checkRewind(ctx context.Context, app config.App, run *inventory.Run, rev source.Revision) *Rewind {
	run.SetRevision(rev.SHA)
	last := run.Revision()
	src := r.sources[app.Source]
	if last == "" || last == rev.SHA || src == nil {
		return nil
	}
	a, err := src.Descends(ctx, rev.SHA, last)
	if a == source.AncestryDescends {
		return nil
	}
	rw := &Rewind{From: last, To: rev.SHA, Ancestry: a, Allowed: app.AllowRewinds}
	if err != nil {
		rw.Ancestry, rw.Cause = source.AncestryUnknown, redact.Error(err)
	}
	if !rw.Allowed {
		run.Rewound(rw.refusal(app.Name))
	}
	return rw
}

// reportRewind tells of a rewind the run met: a Warning Event Rewound on
// every run while it holds (the recorder folds repeats), and, once per
// rewind, a log line, the metric and a prune alert; /status shows it until
// a run applies without one.
func (a *appRun) reportRewind(rendered *Rendered) {
	d, app := a.d, a.app
	rw := rendered.Rewind
	if rw == nil {
		if rendered.Prune != nil {
			a.rewind = ""
			d.setStatus(app.Name, func(s *AppStatus) { s.Rewound = nil })
		}
		return
	}
	outcome := "its prune is refused"
	if rw.Allowed {
		outcome = "pruned anyway (allowRewinds)"
	}
	d.event(app, corev1.EventTypeWarning, "Rewound", "%s; %s", rw.what(), outcome)
	key := rw.From + ".." + rw.To
	if a.rewind == key {
		return
	}
	a.rewind = key
	now := d.opts.Clock.Now()
	d.log.Warn("revision rewound: "+rw.what()+"; "+outcome, "app", app.Name, "from", rw.From, "to", rw.To, "ancestry", string(rw.Ancestry))
	d.m.SourceRewinds.WithLabelValues(app.Name, app.ClusterName()).Inc()
	d.setStatus(app.Name, func(s *AppStatus) {
		s.Rewound = &RewindStatus{From: rw.From, To: rw.To, Ancestry: string(rw.Ancestry), Allowed: rw.Allowed, Since: now}
	})
	if !rw.Allowed {
		// The refused prune sends its own prune alert (reason rewound)
		// naming what it holds; a second one here would say it twice.
		return
	}
	a.notify(alert.Event{Type: alert.EventPrune, App: app.Name, Revision: rw.To, Time: now,
		Summary: "app " + app.Name + ": " + rw.what() + "; " + outcome})
}
