package controller

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// driftWatch is one App's drift watcher, the file daemon's (package
// drift): pointed at each plan the App applied (or, in drift mode
// detect, rendered), it reports what drifted in the App's status
// (status.drift), the log and Events. It keeps watching while the App is
// suspended, against the last plan.
type driftWatch struct {
	w      *drift.Watcher
	cancel context.CancelFunc
	// plan is the revision the watcher follows ("" before SetPlan).
	plan string

	mu       sync.Mutex
	findings int
}

// driftFor returns the App's drift watcher, started on first use; nil
// when the controller is not running (no context to run it in).
func (c *Controller) driftFor(key string, app *v1alpha1.App, ar *appRunner, cfgApp config.App) (*driftWatch, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if dw := c.drifts[key]; dw != nil {
		return dw, nil
	}
	if c.runCtx == nil {
		return nil, nil
	}
	norm, err := ar.runner.Normalizer(cfgApp)
	if err != nil {
		return nil, err
	}
	dyn, err := ar.runner.Dynamic(cfgApp)
	if err != nil {
		return nil, err
	}
	dw := &driftWatch{}
	tenant := reconcile.TenantOf(cfgApp)
	opts := drift.WatcherOptions{
		Normalizer: norm,
		OnChange:   func(d drift.Delta) { c.onDrift(app.Namespace, app.Name, dw, d) },
		OnError: func(err error) {
			c.log.Warn("drift watch", "app", key, "as", identity.Name(tenant), "error", redact.Error(err))
		},
		Reader: identity.Name(tenant),
		User:   identity.User(tenant),
	}
	if inv := c.opts.Runner.Inventory; inv != nil {
		opts.Cache = inv.LiveCache()
		if !cfgApp.DetectOnly() {
			opts.LabelSelector = inventory.LabelPartOf + "=" + inventory.AppID(cfgApp.Name, inv.Namespace())
		}
	}
	w, err := drift.NewWatcher(dyn, c.opts.Cluster.Mapper, opts)
	if err != nil {
		return nil, fmt.Errorf("App %s: drift watcher: %w", key, err)
	}
	ctx, cancel := context.WithCancel(c.runCtx)
	dw.w, dw.cancel = w, cancel
	go func() { _ = w.Run(ctx) }()
	c.drifts[key] = dw
	return dw, nil
}

// pauseDrift stops the App's watcher from judging syncd's own writes
// against the previous plan while it applies; watch (or resumeDrift)
// ends the pause.
func (c *Controller) pauseDrift(key string) {
	if dw := c.driftOf(key); dw != nil {
		dw.w.Pause()
	}
}

func (c *Controller) resumeDrift(key string) {
	if dw := c.driftOf(key); dw != nil {
		dw.w.Resume()
	}
}

// driftOf returns the App's drift watch; nil when it has none.
func (c *Controller) driftOf(key string) *driftWatch {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.drifts[key]
}

// watchDrift points the App's watcher at a plan: the one just applied
// (cs holds the resourceVersions the apply left, so a lagging watch is
// not taken for drift) or just rendered (cs nil).
func (c *Controller) watchDrift(key string, app *v1alpha1.App, ar *appRunner, rendered *reconcile.Rendered, cs *applier.ChangeSet) error {
	cfgApp := ar.cfg.Apps[0]
	dw, err := c.driftFor(key, app, ar, cfgApp)
	if err != nil || dw == nil {
		return err
	}
	dopts, err := reconcile.DriftOptions(cfgApp)
	if err != nil {
		dw.w.Resume()
		return err
	}
	dopts.Sensitive = rendered.Plan.Sensitive(dopts.Sensitive)
	dw.w.Applied(appliedVersions(cs))
	if err := dw.w.SetPlan(rendered.Plan, dopts); err != nil {
		dw.w.Resume()
		return fmt.Errorf("App %s: drift watcher cannot follow the plan: %w", key, err)
	}
	c.mu.Lock()
	dw.plan = rendered.Plan.Revision
	c.mu.Unlock()
	return nil
}

// watching reports whether the App's watcher follows a plan.
func (c *Controller) watching(key string) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	dw := c.drifts[key]
	return dw != nil && dw.plan != ""
}

// appliedVersions are the newest resourceVersion an apply left on each
// object (an object split between managers is written once per slice).
func appliedVersions(cs *applier.ChangeSet) map[planner.ObjectRef]string {
	versions := map[planner.ObjectRef]string{}
	if cs == nil {
		return versions
	}
	for _, ch := range cs.Changes {
		if ch.ResourceVersion != "" && reconcile.NewerResourceVersion(ch.ResourceVersion, versions[ch.Object]) {
			versions[ch.Object] = ch.ResourceVersion
		}
	}
	return versions
}

// onDrift logs each new drift finding, records a DriftDetected Event
// and writes the App's drift summary.
func (c *Controller) onDrift(namespace, name string, dw *driftWatch, d drift.Delta) {
	key := namespace + "/" + name
	var fresh []drift.Finding
	for _, f := range d.New {
		if f.Class.IsDrift() {
			fresh = append(fresh, f)
			c.log.Warn("drift: "+f.Sentence(), "app", key, "object", f.Ref.String(), "path", f.Path, "class", string(f.Class), "culprit", f.Culprit)
		}
	}
	n := 0
	for _, f := range dw.w.Report().Findings {
		if f.Class.IsDrift() {
			n++
		}
	}
	dw.mu.Lock()
	changed := n != dw.findings
	dw.findings = n
	dw.mu.Unlock()
	if len(fresh) > 0 && c.opts.Events != nil {
		ref := &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindApp, Namespace: namespace, Name: name}
		c.opts.Events.Eventf(ref, corev1.EventTypeWarning, "DriftDetected", "%s", redact.Sprintf("%d field(s) drifted from revision %s, e.g. %s", len(fresh), shortRevision(d.Revision), fresh[0].Sentence()))
	}
	if changed {
		sum := v1alpha1.DriftSummary{Findings: n, Revision: d.Revision, Time: metav1.NewTime(c.opts.Clock.Now())}
		if err := c.writeDrift(namespace, name, sum); err != nil {
			c.log.Warn("drift summary not written", "app", key, "error", err)
		}
	}
}

// writeDrift merges the drift summary into the App's status, alone (the
// attempts' status writes leave it out: statusWriter.write).
func (c *Controller) writeDrift(namespace, name string, sum v1alpha1.DriftSummary) error {
	data, err := json.Marshal(map[string]any{"status": map[string]any{"drift": sum}})
	if err != nil {
		return err
	}
	ctx := c.runCtx
	if ctx == nil {
		ctx = context.Background()
	}
	_, err = c.opts.Cluster.Dynamic.Resource(v1alpha1.AppResource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	return err
}

// stopDrift stops the App's watcher (the App is gone).
func (c *Controller) stopDrift(key string) {
	c.mu.Lock()
	dw := c.drifts[key]
	delete(c.drifts, key)
	c.mu.Unlock()
	if dw != nil {
		dw.cancel()
	}
}

// detect runs an App in drift mode detect: it renders the current
// revision and points the drift watcher at it; nothing is written.
func (c *Controller) detect(ctx context.Context, key string, app *v1alpha1.App, ar *appRunner) (attempt, time.Duration) {
	cfgApp := ar.cfg.Apps[0]
	rendered, err := ar.runner.Render(ctx, cfgApp, "")
	at := attempt{Err: err, Reason: v1alpha1.ReasonSucceeded, Revision: c.revision(ar, rendered)}
	if err != nil {
		var se *source.Error
		at.Reason = reasonOf(reconcile.ResultFailed, false, errors.As(err, &se))
		return at, 0
	}
	if err := c.watchDrift(key, app, ar, rendered, nil); err != nil {
		return attempt{Reason: v1alpha1.ReasonApplyFailed, Err: err, Revision: at.Revision}, 0
	}
	return at, pollAfter(ar.cfg.Sources[0].Git, c.opts.Clock.Now())
}

// suspended keeps a suspended App's drift reporting: its watcher keeps
// following the last plan applied; when there is none (syncd restarted
// while the App was suspended) the current revision is rendered, not
// applied, and watched. Nothing is written but the drift summary.
func (c *Controller) suspended(ctx context.Context, key string, app *v1alpha1.App) {
	if app.Status.ObservedGeneration != app.Generation {
		// The suspension is seen; the conditions keep their last values.
		st := *app.Status.DeepCopy()
		st.ObservedGeneration = app.Generation
		if err := c.status.write(ctx, app.Namespace, app.Name, st); err != nil {
			c.log.Warn("suspended App: status not written", "app", key, "error", message(err))
		}
	}
	if c.watching(key) {
		c.log.Info("App suspended; not applied, drift still reported", "app", key)
		return
	}
	ar, _, err := c.prepare(ctx, key, app)
	if err == nil {
		var rendered *reconcile.Rendered
		if rendered, err = ar.runner.Render(ctx, ar.cfg.Apps[0], ""); err == nil {
			err = c.watchDrift(key, app, ar, rendered, nil)
		}
	}
	if err != nil {
		c.log.Warn("App suspended; its drift cannot be watched", "app", key, "error", message(err))
		return
	}
	c.log.Info("App suspended; not applied, drift watched against the current revision", "app", key)
}
