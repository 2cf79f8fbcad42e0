package daemon

import (
	"sync"
	"time"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/source"
)

// alertSinks is the config's alerts as the alert stage takes them.
func alertSinks(alerts []config.Alert) []alert.Sink {
	out := make([]alert.Sink, 0, len(alerts))
	for _, a := range alerts {
		out = append(out, alert.Sink{Name: a.Name, Type: alert.SinkType(a.Type), URLFile: a.URLFile, HMACKeyFile: a.HMACKeyFile, Events: a.Events})
	}
	return out
}

// appAlerts is what an app's alerts remember of the findings they
// opened, so that each is resolved when it clears. It outlives a config
// generation: a reload hands it to the next generation's loop for an app
// that is still configured (carryAlerts), together with the sinks'
// dedupe memory (alert.Notifier.Inherit).
type appAlerts struct {
	// mu guards the trackers: the app's loop, its drift watcher and the
	// polls of its sources use them, and at a reload the loops and
	// watchers of two generations may overlap for a moment.
	mu sync.Mutex
	// failures pairs the error alerts of the app's reconciles with their
	// resolution, conflicts its conflict alerts.
	failures  alert.Failures
	conflicts alert.ConflictAlerts
	// drift and overlaps pair the drift watcher's alerts with their
	// resolutions.
	drift    alert.DriftAlerts
	overlaps alert.OverlapAlerts
	// sources pairs the error alerts of failed polls with their
	// resolution, by source name: a source failure is the source's, open
	// until that source answers, apart from the app's reconcile errors.
	sources map[string]*alert.Failures
}

// reconciled returns the alerts of how one reconcile of app ended: its
// conflicts, its failure or recovery.
func (t *appAlerts) reconciled(app string, out reconcile.Outcome, err error, at time.Time) []alert.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	evs := t.conflicts.Events(app, out.ChangeSet, at)
	return append(evs, t.failures.Events(alert.Attempt{App: app, Revision: out.Revision.SHA, Stage: out.Stage, Result: out.Result, Err: err, At: at})...)
}

// polled returns the alerts of one poll of src for app: the source's
// error alert when it failed (err, as the app sees it), its resolution
// when it answers again.
func (t *appAlerts) polled(app, src string, inForce source.Revision, err error, at time.Time) []alert.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	f := t.sources[src]
	if f == nil {
		if err == nil {
			return nil
		}
		f = &alert.Failures{}
		if t.sources == nil {
			t.sources = map[string]*alert.Failures{}
		}
		t.sources[src] = f
	}
	return f.Events(alert.Attempt{App: app, Revision: inForce.SHA, Stage: reconcile.StageSource, Result: reconcile.ResultFailed, Err: err, At: at})
}

// driftChanged returns the alerts of a change of the app's drift
// findings.
func (t *appAlerts) driftChanged(ch drift.Delta) []alert.Event {
	t.mu.Lock()
	defer t.mu.Unlock()
	return append(t.drift.Events(ch), t.overlaps.Events(ch)...)
}

// carryAlerts readies a generation's alerts: its notifier takes over the
// findings the previous generation's alerted (alert.Notifier.Inherit);
// the apps this generation still runs keep all their trackers: their
// next reconcile resolves or keeps open their errors and conflicts, and
// their new drift watcher takes over the findings of the previous
// generation's (reconcile.Reconciler.Inherit), so it resolves a drift or
// overlap when the new config's apply or rules clear it, and never
// alerts again one that remains; every open finding of the apps it no
// longer runs is resolved: nothing else would ever resolve them.
func (d *Daemon) carryAlerts(notifier *alert.Notifier, appsBySource map[string][]config.App) {
	keep := map[string]bool{}
	for _, apps := range appsBySource {
		for _, app := range apps {
			keep[app.Name] = true
		}
	}
	d.mu.Lock()
	defer d.mu.Unlock()
	if notifier != nil {
		notifier.Inherit(d.alertMemory)
		d.alertMemory = notifier
	}
	d.notifier = notifier
	for name := range d.appAlerts {
		if keep[name] {
			continue
		}
		delete(d.appAlerts, name)
		if notifier != nil {
			notifier.ResolveApp(name, "app "+name+" was removed from the config; its findings are no longer watched")
		}
	}
	for name := range keep {
		if d.appAlerts[name] == nil {
			d.appAlerts[name] = &appAlerts{}
		}
	}
}

// alertsOf returns app's alert trackers (carryAlerts made them).
func (d *Daemon) alertsOf(app string) *appAlerts {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.appAlerts[app] == nil {
		d.appAlerts[app] = &appAlerts{}
	}
	return d.appAlerts[app]
}

// notify sends evs through the running generation's notifier (none when
// its alerts cannot run).
func (d *Daemon) notify(evs ...alert.Event) {
	d.mu.Lock()
	n := d.notifier
	d.mu.Unlock()
	if n == nil {
		return
	}
	for _, ev := range evs {
		n.Notify(ev)
	}
}
