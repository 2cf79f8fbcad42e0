package daemon

import (
	"fmt"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/depends"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/source"
)

// ResultWaiting: the app was not applied because it waits for its
// dependencies (apps[].dependsOn); AppStatus.Waiting says for which and
// why. Its objects stay as its last reconcile left them.
const ResultWaiting reconcile.Result = "waiting"

// WaitReason says why an app waits for one of its dependencies.
type WaitReason string

// Reasons an app waits for a dependency.
const (
	// WaitNoRevision: the dependency's source has not resolved a revision
	// since the config started.
	WaitNoRevision WaitReason = "no-revision"
	// WaitNotApplied: the dependency has not reconciled its current
	// revision yet (it is queued, being applied, or backing off after a
	// failure at an older revision).
	WaitNotApplied WaitReason = "not-applied"
	// WaitFailed: the dependency's last reconcile, of its current
	// revision, did not succeed (failed, conflicts, unhealthy).
	WaitFailed WaitReason = "failed"
	// WaitWaiting: the dependency waits for its own dependencies.
	WaitWaiting WaitReason = "waiting"
	// WaitOtherShard: another replica runs the dependency, so this one
	// cannot see its applies; dependsOn across shards is not supported.
	WaitOtherShard WaitReason = "other-shard"
)

// DependencyWait is one dependency an app waits for, as /status shows it.
type DependencyWait struct {
	App    string     `json:"app"`
	Reason WaitReason `json:"reason"`
	// Revision is the dependency's current revision: the one it must
	// reconcile successfully first ("" when its source resolved none).
	Revision string `json:"revision,omitempty"`
	Message  string `json:"message"`
}

// WaitStatus is what a held app waits for, as /status shows it.
type WaitStatus struct {
	// Revision is the revision the app applies once its dependencies are
	// ready.
	Revision string           `json:"revision"`
	Since    time.Time        `json:"since"`
	On       []DependencyWait `json:"on"`
}

// dependencyState is what the daemon knows of one dependency of an app.
type dependencyState struct {
	name string
	// status is the dependency's /status (nil when another shard runs it).
	status *AppStatus
	// current is the revision its source resolved last ("" for none).
	current string
}

// waitFor returns why an app must still wait for a dependency, or nil
// when the dependency's last reconcile succeeded at its current revision
// (healthy too, when it waits: an unhealthy end is not a success).
func waitFor(dep dependencyState) *DependencyWait {
	w := &DependencyWait{App: dep.name, Revision: dep.current}
	st := dep.status
	switch {
	case st == nil:
		w.Reason, w.Message = WaitOtherShard, fmt.Sprintf("%s runs in another shard; this replica cannot see its applies (dependsOn across shards is not supported)", dep.name)
	case dep.current == "":
		w.Reason, w.Message = WaitNoRevision, fmt.Sprintf("%s: its source has not resolved a revision yet", dep.name)
	case (st.Result == reconcile.ResultOK || st.InForceOK) && st.Revision == dep.current:
		// Reconciled ok, or so before its source began to fail: what
		// it applied stands while the source is retried.
		return nil
	case st.Result == ResultWaiting:
		w.Reason, w.Message = WaitWaiting, fmt.Sprintf("%s waits for its own dependencies", dep.name)
	case st.Revision == dep.current && st.Result != ResultPending:
		w.Reason, w.Message = WaitFailed, fmt.Sprintf("%s: its last reconcile of revision %s ended %s: %s", dep.name, reconcile.ShortSHA(dep.current), st.Result, st.Error)
	case st.Revision == "":
		w.Reason, w.Message = WaitNotApplied, fmt.Sprintf("%s has not reconciled revision %s yet", dep.name, reconcile.ShortSHA(dep.current))
	default:
		w.Reason, w.Message = WaitNotApplied, fmt.Sprintf("%s has not reconciled revision %s yet (its last reconcile, of %s, ended %s)", dep.name, reconcile.ShortSHA(dep.current), reconcile.ShortSHA(st.Revision), st.Result)
	}
	return w
}

// dependencies is one config generation's view of the apps' dependsOn:
// the revision each app's source resolved last, and a wake-up channel per
// app, signalled when one of its dependencies settled (reconciled, or
// started or stopped waiting), so a held app is retried at once rather
// than at its next poll.
type dependencies struct {
	graph *depends.Graph
	wake  map[string]chan struct{}

	mu      sync.Mutex
	current map[string]string
}

// newDependencies indexes the dependsOn of the config's apps.
func newDependencies(apps []config.App) *dependencies {
	g := &dependencies{graph: config.DependencyGraph(apps), wake: map[string]chan struct{}{}, current: map[string]string{}}
	for _, a := range apps {
		g.wake[a.Name] = make(chan struct{}, 1)
	}
	return g
}

// resolved records the revision a successful poll handed to each app
// (its work's, which joins a values source's for an app with
// helm.valuesSource). It runs before the apps are queued, so a dependent
// never sees a dependency's older revision as current.
func (g *dependencies) resolved(ev source.Event, works []appWork) {
	if g == nil || ev.Err != nil {
		return
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	for _, w := range works {
		g.current[w.app.Name] = w.rev.SHA
	}
}

// currentRevision returns the revision app's source resolved last.
func (g *dependencies) currentRevision(app string) string {
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.current[app]
}

// wakeup returns the channel that signals app's loop that one of its
// dependencies settled (nil, never ready, for an unknown app).
func (g *dependencies) wakeup(app string) <-chan struct{} {
	if g == nil {
		return nil
	}
	return g.wake[app]
}

// settled wakes the apps that depend on app; a wake-up already pending is
// enough.
func (g *dependencies) settled(app string) {
	if g == nil {
		return
	}
	for _, dependent := range g.graph.Dependents(app) {
		select {
		case g.wake[dependent] <- struct{}{}:
		default:
		}
	}
}

// dependencyHold is an app loop's state about its dependencies.
type dependencyHold struct {
	graph *dependencies
	// held is set while the pending revision waits for dependencies.
	held bool
	// said is the wait last logged and recorded as an Event, so each is
	// told once.
	said string
}

// dependencyWaits returns what app waits for, in dependsOn order; none
// when every dependency reconciled its current revision successfully.
func (d *Daemon) dependencyWaits(app config.App, deps *dependencies) []DependencyWait {
	return depends.Waits(app.DependsOn, func(name string) (DependencyWait, bool) {
		if w := waitFor(d.dependencyState(name, deps)); w != nil {
			return *w, true
		}
		return DependencyWait{}, false
	})
}

// dependencyState returns what the daemon knows of dependency name.
func (d *Daemon) dependencyState(name string, deps *dependencies) dependencyState {
	dep := dependencyState{name: name, current: deps.currentRevision(name)}
	d.mu.Lock()
	defer d.mu.Unlock()
	if s, ok := d.status[name]; ok && d.InShard(name) {
		st := *s
		dep.status = &st
	}
	return dep
}

// holdForDependencies reports whether the app must wait before applying
// w, and publishes the answer: /status (result waiting and what for), the
// syncd_dependency_waiting metric, a log line and an Event each time the
// wait changes. The app's dependents are woken when it starts or stops
// waiting, so their own waits follow.
func (a *appRun) holdForDependencies(w *appWork) bool {
	if len(a.app.DependsOn) == 0 || a.waits.graph == nil {
		return false
	}
	d := a.d
	waits := d.dependencyWaits(a.app, a.waits.graph)
	d.m.DependencyWaiting.DeletePartialMatch(map[string]string{"app": a.app.Name})
	for _, wt := range waits {
		d.m.DependencyWaiting.WithLabelValues(a.app.Name, a.app.ClusterName(), wt.App, string(wt.Reason)).Set(1)
	}
	held := len(waits) > 0
	d.setStatus(a.app.Name, func(s *AppStatus) { s.Waiting = nextWait(s.Waiting, w.rev.SHA, waits, d.opts.Clock.Now()) })
	if held {
		d.setStatus(a.app.Name, func(s *AppStatus) { s.Result = ResultWaiting })
		a.sayWait(w, waits)
	} else {
		a.waits.said = ""
	}
	if held != a.waits.held {
		a.waits.graph.settled(a.app.Name)
	}
	a.waits.held = held
	return held
}

// nextWait is the app's WaitStatus after a check: nil when it waits for
// nothing; its start kept while it waits to apply the same revision.
func nextWait(prev *WaitStatus, rev string, waits []DependencyWait, now time.Time) *WaitStatus {
	if len(waits) == 0 {
		return nil
	}
	since := now
	if prev != nil && prev.Revision == rev {
		since = prev.Since
	}
	return &WaitStatus{Revision: rev, Since: since, On: waits}
}

// sayWait logs the wait and records it as an Event, once per change.
func (a *appRun) sayWait(w *appWork, waits []DependencyWait) {
	msgs := make([]string, len(waits))
	for i, wt := range waits {
		msgs[i] = wt.Message
	}
	said := w.rev.SHA + "\n" + strings.Join(msgs, "\n")
	if said == a.waits.said {
		return
	}
	a.waits.said = said
	a.d.log.Info("waiting for dependencies; not applied", "app", a.app.Name, "revision", w.rev.SHA, "waitingFor", strings.Join(msgs, "; "))
	a.d.event(a.app, corev1.EventTypeNormal, "DependencyNotReady", "revision %s waits: %s", reconcile.ShortSHA(w.rev.SHA), strings.Join(msgs, "; "))
}
