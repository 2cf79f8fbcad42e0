package controller

import (
	"context"
	"encoding/json"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
)

// An App's drift is watched by its Reconciler (package reconcile), the
// file daemon's: pointed at each plan the App applied (or, in drift mode
// detect, rendered), on the App's cluster, as the App's identity. The
// controller reports what drifted in the App's status (status.drift) and
// Events; the Reconciler logs it. The watcher keeps watching while the
// App is suspended, against the last plan.

// reconcilerFor returns the App's Reconciler, made on first use; it
// lives until the App is forgotten, across Runner rebuilds, so that it
// sees the App move between clusters. Without a running controller (no
// context) it has no drift watcher.
func (c *Controller) reconcilerFor(key, namespace, name string) *reconcile.Reconciler {
	c.mu.Lock()
	defer c.mu.Unlock()
	if rc := c.reconcilers[key]; rc != nil {
		return rc
	}
	var rc *reconcile.Reconciler
	rc = reconcile.NewReconciler(reconcile.ReconcilerOptions{
		Context: c.runCtx,
		Logger:  c.log.With("app", key),
		OnDrift: func(d drift.Delta) { c.onDrift(namespace, name, rc, d) },
	})
	c.reconcilers[key] = rc
	return rc
}

// reconcilerOf returns the App's Reconciler; nil when it has none.
func (c *Controller) reconcilerOf(key string) *reconcile.Reconciler {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconcilers[key]
}

// onDrift records a DriftDetected Event for new drift findings and
// publishes the App's drift summary.
func (c *Controller) onDrift(namespace, name string, rc *reconcile.Reconciler, d drift.Delta) {
	var fresh []drift.Finding
	for _, f := range d.New {
		if f.Class.IsDrift() {
			fresh = append(fresh, f)
		}
	}
	if len(fresh) > 0 && c.opts.Events != nil {
		ref := &corev1.ObjectReference{APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindApp, Namespace: namespace, Name: name}
		c.opts.Events.Eventf(ref, corev1.EventTypeWarning, "DriftDetected", "%s", redact.Sprintf("%d field(s) drifted from revision %s, e.g. %s", len(fresh), shortRevision(d.Revision), fresh[0].Sentence()))
	}
	c.publishDrift(namespace, name, rc, d.Revision)
	c.alertDrift(namespace, name, d)
}

// driftCount is what an App's drift summary counts: drift findings, and
// overlaps (objects another syncd app declares with the same values, once
// per object and app).
type driftCount struct {
	findings, overlaps int
}

// publishDrift writes the App's drift summary when its counts changed:
// after a change of the findings, and after each reconcile (a watcher
// bound anew, on another cluster, starts empty).
func (c *Controller) publishDrift(namespace, name string, rc *reconcile.Reconciler, revision string) {
	key := namespace + "/" + name
	report := rc.Report()
	if report == nil {
		return
	}
	c.publishFindings(namespace, name, report)
	n := driftCount{overlaps: len(report.Overlaps())}
	for _, f := range report.Findings {
		if f.Class.IsDrift() {
			n.findings++
		}
	}
	c.mu.Lock()
	last := c.findings[key]
	c.findings[key] = n
	c.mu.Unlock()
	if last == n {
		return
	}
	sum := v1alpha1.DriftSummary{Findings: n.findings, Overlaps: n.overlaps, Revision: revision, Time: metav1.NewTime(c.opts.Clock.Now())}
	if err := c.writeDrift(namespace, name, sum); err != nil {
		c.log.Warn("drift summary not written", "app", key, "error", err)
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

// stopReconciler stops the App's drift watcher and drops its Reconciler
// (the App is gone).
func (c *Controller) stopReconciler(key string) {
	c.mu.Lock()
	rc := c.reconcilers[key]
	delete(c.reconcilers, key)
	delete(c.findings, key)
	c.mu.Unlock()
	c.forgetAppAlerts(key)
	if rc != nil {
		rc.Stop()
	}
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
	if rc := c.reconcilerOf(key); rc != nil && rc.Watching() {
		c.log.Info("App suspended; not applied, drift still reported", "app", key)
		return
	}
	if err := c.watchSuspended(ctx, key, app); err != nil {
		c.log.Warn("App suspended; its drift cannot be watched", "app", key, "error", message(err))
		return
	}
	c.log.Info("App suspended; not applied, drift watched against the current revision", "app", key)
}

// watchSuspended renders a suspended App's current revision and points
// its drift watcher at it.
func (c *Controller) watchSuspended(ctx context.Context, key string, app *v1alpha1.App) error {
	ar, _, err := c.prepare(ctx, key, app)
	if err != nil {
		return err
	}
	cfgApp := ar.cfg.Apps[0]
	compiled, err := ar.runner.Compiled(cfgApp.Name)
	if err != nil {
		return err
	}
	rev, release, err := ar.runner.Poll(ctx, cfgApp)
	if err != nil {
		return err
	}
	defer release()
	return c.reconcilerFor(key, app.Namespace, app.Name).Watch(ctx, ar.runner, compiled, rev)
}

// publishFindings makes the App's drift series its report's findings by
// class, as the file daemon's are.
func (c *Controller) publishFindings(namespace, name string, report *drift.Report) {
	if c.opts.Metrics == nil {
		return
	}
	counts := map[drift.Class]int{}
	for _, f := range report.Findings {
		counts[f.Class]++
	}
	c.opts.Metrics.Findings(AppName(namespace, name), c.clusterOf(namespace, name), counts)
}

// clusterOf is the cluster label of an App's series: its spec.cluster's
// name, or syncd's own cluster.
func (c *Controller) clusterOf(namespace, name string) string {
	obj, err := c.apps.ByNamespace(namespace).Get(name)
	if err != nil {
		return config.LocalCluster
	}
	app, err := appFrom(obj)
	if err != nil {
		return config.LocalCluster
	}
	return clusterName(app)
}

// clusterName is the name of the cluster an App applies to, as the
// file's apps name theirs (config.App.ClusterName).
func clusterName(app *v1alpha1.App) string {
	return config.App{AppSpec: app.Spec.AppSpec}.ClusterName()
}
