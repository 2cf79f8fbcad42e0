package daemon

import (
	"time"

	corev1 "k8s.io/api/core/v1"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/reconcile"
)

// RewindStatus is what /status shows of a rewind while it holds.
type RewindStatus struct {
	From     string    `json:"from"`
	To       string    `json:"to"`
	Ancestry string    `json:"ancestry"`
	Allowed  bool      `json:"allowed,omitempty"`
	Since    time.Time `json:"since"`
}

// reportRewind tells of a rewind the run met: a Warning Event Rewound on
// every run while it holds (the recorder folds repeats), and, once per
// rewind, a log line, the metric and a prune alert; /status shows it until
// a run applies without one.
func (a *appRun) reportRewind(rendered *reconcile.Rendered) {
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
	d.event(app, corev1.EventTypeWarning, "Rewound", "%s; %s", rw.String(), outcome)
	key := rw.From + ".." + rw.To
	if a.rewind == key {
		return
	}
	a.rewind = key
	now := d.opts.Clock.Now()
	d.log.Warn("revision rewound: "+rw.String()+"; "+outcome, "app", app.Name, "from", rw.From, "to", rw.To, "ancestry", string(rw.Ancestry))
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
		Summary: "app " + app.Name + ": " + rw.String() + "; " + outcome})
}
