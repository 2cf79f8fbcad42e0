package reconcile

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"strconv"
	"sync"
	"time"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// Outcome is how one reconcile of one app ended: what the drivers (the
// file daemon and the App controller) report, each in its own way
// (/status, metrics and alerts; the App's status and Events).
type Outcome struct {
	// Result is how the reconcile ended (ResultOf).
	Result Result
	// Stage is where a failure the metrics count happened: StageRender
	// or StageCluster before anything was sent, StageApply after; empty
	// for a success and for a failure of the app's own settings.
	Stage Stage
	// Revision is the revision reconciled.
	Revision source.Revision
	// Rendered is the render (nil when it failed): its plan, its prune
	// report and its rewind.
	Rendered *Rendered
	// ChangeSet is what the apply did (nil when nothing was applied: a
	// failed render, or drift mode detect).
	ChangeSet *applier.ChangeSet
	// Detect is set for an app in drift mode detect: rendered and
	// watched, never written.
	Detect bool
}

// ReconcilerOptions configure a Reconciler.
type ReconcilerOptions struct {
	// Context bounds the app's drift watcher: the driver's run, not one
	// reconcile. Nil: no drift watcher (a driver that is not running).
	Context context.Context
	// Logger carries the driver's name for the app (default
	// slog.Default()).
	Logger *slog.Logger
	// DriftDebounce is how long the drift watcher folds events on one
	// object before publishing (default: the drift package's).
	DriftDebounce time.Duration
	// OnDrift receives every change of the app's drift findings, after
	// the new drift findings were logged (nil: none).
	OnDrift func(drift.Delta)
}

// Reconciler reconciles one app, one revision at a time, for either
// driver: it renders the app, applies it (an app in drift mode detect is
// only watched), and points the app's drift watcher at what it applied.
// The watcher is bound to the app's cluster (Runner.Target) and its
// identity: a new cluster, a new kubeconfig or a new serviceAccountName
// starts a new one. When the app is applied to another cluster than the
// last time, the cluster it left is pruned under the app's prune rules
// once the new one applied cleanly (Left).
//
// It schedules nothing, retries nothing and writes no status: the
// drivers do (controller-runtime's reconcile contract). One Reconciler
// serves one app; Reconcile is not called concurrently for it.
type Reconciler struct {
	opts ReconcilerOptions
	log  *slog.Logger

	mu    sync.Mutex
	watch *appWatch
	// handover is the watcher of the Reconciler this one inherited from
	// (Inherit): the first watcher this one makes takes over its
	// findings.
	handover *drift.Watcher
	// applied is the cluster the app last applied to cleanly; left is a
	// cluster it left whose prune has not completed yet.
	applied, left *Target
}

// appWatch is the app's drift watcher and what it was made for.
type appWatch struct {
	w      *drift.Watcher
	cancel context.CancelFunc
	key    watchKey
	// plan is the revision the watcher follows ("" before SetPlan).
	plan string
}

// watchKey is what a drift watcher is bound to: a change of any part
// makes a new watcher.
type watchKey struct {
	target *Target
	tenant identity.Tenant
	// detect: an app in drift mode detect is watched by name, not by
	// its inventory label (syncd never labels its objects).
	detect bool
}

// NewReconciler returns the Reconciler of one app.
func NewReconciler(opts ReconcilerOptions) *Reconciler {
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	return &Reconciler{opts: opts, log: opts.Logger}
}

// Inherit takes over what prev knew of the app's clusters (the one it
// last applied to, one it left), so that a move made by a config change
// is seen across the driver's restart of the app, and its drift findings:
// the first drift watcher rc makes inherits them from prev's
// (drift.Watcher.Inherit), so that a finding alerted before the restart
// is resolved when it clears and not alerted again while it remains.
// prev's watcher itself is not taken: it ends with prev's context.
func (rc *Reconciler) Inherit(prev *Reconciler) {
	if prev == nil {
		return
	}
	prev.mu.Lock()
	applied, left, handover := prev.applied, prev.left, prev.handover
	if prev.watch != nil {
		handover = prev.watch.w
	}
	prev.mu.Unlock()
	rc.mu.Lock()
	rc.applied, rc.left, rc.handover = applied, left, handover
	rc.mu.Unlock()
}

// Reconcile renders the app at rev (a revision its source resolved and
// the caller holds), applies it to its cluster and prunes what left Git,
// then points the drift watcher at what was applied. A failed render
// sends nothing and prunes nothing (the inventory records the refusal).
// The error is the one a user sees (ResultOf); the Outcome is filled in
// as far as the reconcile went.
func (rc *Reconciler) Reconcile(ctx context.Context, r *Runner, a *App, rev source.Revision) (Outcome, error) {
	log := rc.log.With("revision", rev.SHA, "cluster", a.Config.ClusterName())
	out := Outcome{Revision: rev, Result: ResultFailed}
	rendered, err := r.renderAt(ctx, a, rev)
	if err != nil {
		out.Stage = rc.renderFailed(log, r, a, err)
		return out, err
	}
	out.Rendered = rendered
	target, err := rc.bind(ctx, r, a)
	if err != nil {
		log.Error("drift normalizer cannot be made; nothing applied", "error", err)
		return out, err
	}
	dopts := r.driftOptions(a, rendered.Plan)
	if a.Config.DetectOnly() {
		// Never written: no apply, no prune, no handoff, no inventory.
		// The watcher reports every difference, objects Git declares
		// that do not exist included.
		log.Info("drift mode detect: watching, not applying", "objects", len(rendered.Plan.Objects))
		out.Detect = true
		if err := rc.follow(rendered.Plan, nil, dopts); err != nil {
			return out, err
		}
		out.Result = ResultOK
		return out, nil
	}
	return rc.apply(ctx, log, r, a, target, out, dopts)
}

// apply applies the rendered app to target with the drift watcher
// paused, points the watcher at the result, and prunes a cluster the
// app left.
func (rc *Reconciler) apply(ctx context.Context, log *slog.Logger, r *Runner, a *App, target *Target, out Outcome, dopts drift.Options) (Outcome, error) {
	plan := out.Rendered.Plan
	log.Info("applying", "objects", len(plan.Objects))
	rc.pauseDrift()
	cs, err := r.applyOn(ctx, a, target, out.Rendered, false, nil)
	out.ChangeSet = cs
	if cs == nil {
		rc.resumeDrift()
	} else {
		if ferr := rc.follow(plan, cs, dopts); ferr != nil {
			log.Error("drift watcher cannot follow the plan", "error", ferr)
		}
		logChanges(log, cs)
	}
	out.Result, err = ResultOf(out.Rendered, cs, err)
	if err != nil {
		out.Stage = StageApply
		return out, err
	}
	rc.appliedTo(target)
	if err := rc.pruneLeft(ctx, log, r, a); err != nil {
		out.Result, out.Stage = ResultFailed, StageApply
		return out, err
	}
	return out, nil
}

// renderFailed records a run refused before its apply: the inventory
// keeps the refusal (nothing is pruned), and the stage it failed in is
// returned for the metrics.
func (rc *Reconciler) renderFailed(log *slog.Logger, r *Runner, a *App, err error) Stage {
	// The source was polled by the driver: a failure here is the
	// render's, or the app's cluster's.
	reason := inventory.ReasonRenderFailed
	if errors.Is(err, ErrClusterUnreachable) {
		reason = inventory.ReasonClusterUnreachable
	}
	if r.opts.Inventory != nil {
		r.opts.Inventory.Refuse(a.Config.Name, reason, err)
	}
	stage := stageOf(reason)
	log.Error(string(stage)+" failed; nothing applied, nothing pruned", "error", err)
	return stage
}

// logChanges logs every object the apply wrote or could not.
func logChanges(log *slog.Logger, cs *applier.ChangeSet) {
	for _, c := range cs.Changes {
		if c.Action == applier.Unchanged || c.Action == applier.Skipped || c.Action == applier.Excluded {
			continue
		}
		log.Info("object "+string(c.Action), "object", c.Object.String(), "manager", string(c.Manager))
	}
}

// Watch renders the app at rev and points its drift watcher at the
// render, writing nothing: a suspended App keeps reporting drift.
func (rc *Reconciler) Watch(ctx context.Context, r *Runner, a *App, rev source.Revision) error {
	rendered, err := r.renderAt(ctx, a, rev)
	if err != nil {
		return err
	}
	if _, err := rc.bind(ctx, r, a); err != nil {
		return err
	}
	return rc.follow(rendered.Plan, nil, r.driftOptions(a, rendered.Plan))
}

// driftOptions are the app's drift settings for a plan: its sensitive
// fields added, and the fields found flapping in this run (SetFlapping).
func (r *Runner) driftOptions(a *App, plan *planner.Plan) drift.Options {
	opts := a.Drift
	opts.Sensitive = plan.Sensitive(opts.Sensitive)
	r.mu.Lock()
	opts.Flaps = r.flaps[a.Config.Name]
	r.mu.Unlock()
	return opts
}

// Watching reports whether the app's drift watcher follows a plan.
func (rc *Reconciler) Watching() bool {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.watch != nil && rc.watch.plan != ""
}

// Report is the app's drift watcher's current report (nil without a
// watcher).
func (rc *Reconciler) Report() *drift.Report {
	rc.mu.Lock()
	w := rc.watch
	rc.mu.Unlock()
	if w == nil {
		return nil
	}
	return w.w.Report()
}

// Stop stops the app's drift watcher (the app is gone).
func (rc *Reconciler) Stop() {
	rc.mu.Lock()
	w := rc.watch
	rc.watch = nil
	rc.mu.Unlock()
	if w != nil {
		w.cancel()
	}
}

// bind returns the app's cluster and makes sure its drift watcher
// watches there, as the app's identity: a watcher bound to another
// cluster or identity (or, in the driver, another Runner: a new config)
// is stopped and a new one started, which takes over the findings of the
// one it replaces, so that they are resolved when they clear and not
// alerted again while they remain.
func (rc *Reconciler) bind(ctx context.Context, r *Runner, a *App) (*Target, error) {
	t, err := r.Target(ctx, a.Config)
	if err != nil {
		return nil, err
	}
	key := watchKey{target: t, tenant: a.Tenant, detect: a.Config.DetectOnly()}
	rc.mu.Lock()
	cur, prev := rc.watch, rc.handover
	rc.mu.Unlock()
	if rc.opts.Context == nil || (cur != nil && cur.key == key) {
		return t, nil
	}
	w, err := rc.newWatcher(t, a)
	if err != nil {
		return nil, err
	}
	if cur != nil {
		prev = cur.w
	}
	w.Inherit(prev)
	wctx, cancel := context.WithCancel(rc.opts.Context)
	go func() { _ = w.Run(wctx) }()
	rc.mu.Lock()
	rc.watch, rc.handover = &appWatch{w: w, cancel: cancel, key: key}, nil
	rc.mu.Unlock()
	if cur != nil {
		cur.cancel()
	}
	return t, nil
}

// newWatcher makes the app's drift watcher on target. It lists, watches
// and dry-runs through the app's own client (its serviceAccountName), so
// drift reads never need more than the app's applies have, and shares
// the target's live cache (its inventory's informers), so each member is
// listed, watched and kept in memory once per cluster.
func (rc *Reconciler) newWatcher(t *Target, a *App) (*drift.Watcher, error) {
	dyn, err := t.Dynamic(a.Config)
	if err != nil {
		return nil, err
	}
	norm, err := applier.New(dyn, t.Cluster.Mapper, applier.Options{})
	if err != nil {
		return nil, fmt.Errorf("app %s: %w", a.Config.Name, err)
	}
	opts := drift.WatcherOptions{
		Normalizer: norm,
		Debounce:   rc.opts.DriftDebounce,
		OnChange:   rc.onChange,
		OnError: func(err error) {
			rc.log.Warn("drift watch", "as", identity.Name(a.Tenant), "error", redact.Error(err))
		},
		Reader:  identity.Name(a.Tenant),
		User:    identity.User(a.Tenant),
		Cluster: t.Name,
	}
	if inv := t.Inventory; inv != nil {
		opts.Cache = inv.LiveCache()
		if !a.Config.DetectOnly() {
			// Watch only the app's members, not every object of the
			// kind in the namespaces it shares with other apps.
			opts.LabelSelector = inventory.LabelPartOf + "=" + inventory.AppID(a.Config.Name, inv.Namespace())
		}
	}
	w, err := drift.NewWatcher(dyn, t.Cluster.Mapper, opts)
	if err != nil {
		return nil, fmt.Errorf("app %s: drift watcher on cluster %s: %w", a.Config.Name, t.Name, err)
	}
	return w, nil
}

// onChange logs each new drift finding and hands the change to the
// driver.
func (rc *Reconciler) onChange(d drift.Delta) {
	for _, f := range d.New {
		if f.Class.IsDrift() {
			rc.log.Warn("drift: "+f.Sentence(), "object", f.Ref.String(), "path", f.Path, "class", string(f.Class), "culprit", f.Culprit)
		}
	}
	for _, o := range drift.OverlapsOf(d.New) {
		rc.log.Warn("overlap: "+o.Sentence(), "object", o.Object.String(), "otherApp", o.OtherApp, "fields", o.Fields)
	}
	if rc.opts.OnDrift != nil {
		rc.opts.OnDrift(d)
	}
}

// pauseDrift stops the drift watcher's evaluation while the app is
// applied, so that syncd's own writes are never judged against the
// previous plan; follow (or resumeDrift, when nothing was applied) ends
// it.
func (rc *Reconciler) pauseDrift() {
	if w := rc.current(); w != nil {
		w.w.Pause()
	}
}

// resumeDrift ends a pause when nothing was applied.
func (rc *Reconciler) resumeDrift() {
	if w := rc.current(); w != nil {
		w.w.Resume()
	}
}

func (rc *Reconciler) current() *appWatch {
	rc.mu.Lock()
	defer rc.mu.Unlock()
	return rc.watch
}

// follow points the drift watcher at a plan: the one just applied (cs
// holds the resourceVersions the apply left, so a lagging watch is not
// mistaken for drift) or just rendered (cs nil). Setting the plan ends a
// pause and re-evaluates every object from the watcher's cache.
func (rc *Reconciler) follow(plan *planner.Plan, cs *applier.ChangeSet, opts drift.Options) error {
	w := rc.current()
	if w == nil {
		return nil
	}
	w.w.Applied(appliedVersions(cs))
	if err := w.w.SetPlan(plan, opts); err != nil {
		w.w.Resume()
		return fmt.Errorf("drift watcher cannot follow the plan: %w", err)
	}
	rc.mu.Lock()
	w.plan = plan.Revision
	rc.mu.Unlock()
	return nil
}

// appliedVersions are the newest resourceVersion an apply left on each
// object: an object split between managers is written once per slice,
// and its newest version counts.
func appliedVersions(cs *applier.ChangeSet) map[planner.ObjectRef]string {
	versions := map[planner.ObjectRef]string{}
	if cs == nil {
		return versions
	}
	for _, c := range cs.Changes {
		if c.ResourceVersion != "" && newerResourceVersion(c.ResourceVersion, versions[c.Object]) {
			versions[c.Object] = c.ResourceVersion
		}
	}
	return versions
}

// newerResourceVersion reports whether resourceVersion a is newer than b
// ("" is oldest; versions that are not numbers count as newer).
func newerResourceVersion(a, b string) bool {
	x, errA := strconv.ParseUint(a, 10, 64)
	y, errB := strconv.ParseUint(b, 10, 64)
	return b == "" || errA != nil || errB != nil || x > y
}
