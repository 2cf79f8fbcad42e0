package controller

import (
	"context"
	"crypto/sha256"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"time"

	"github.com/robfig/cron/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/cache"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appmetrics"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
)

var everything = labels.Everything()

// appRunner is the library state of one App: its Runner (and so its
// Source and Git cache), kept while its translated config is unchanged.
type appRunner struct {
	sum    [32]byte
	cfg    *config.Config
	runner *reconcile.Runner
	// src is the App's source object as the reconcile that built or
	// reused the Runner read it.
	src Source
}

// reconcile brings one App to its desired state. It returns when to look
// again (0: on the next event), or an error to retry with backoff. A
// dequeue of an App backing off from a failure that finds the revision
// that failed only looks again later (backoff.go): nothing is written.
func (c *Controller) reconcile(ctx context.Context, key string) (time.Duration, error) {
	c.count(key)
	retry := c.backoffs.take(key)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return 0, nil
	}
	obj, err := c.apps.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		c.forget(key)
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	app, err := appFrom(obj)
	if err != nil {
		return 0, fmt.Errorf("App %s: decode: %w", key, err)
	}
	if c.opts.InShard != nil && !c.opts.InShard(AppName(ns, name)) {
		return 0, nil
	}
	if app.DeletionTimestamp != nil {
		return 0, c.finalize(ctx, app)
	}
	if err := c.ensureFinalizer(ctx, app); err != nil {
		return 0, err
	}
	if app.Spec.Suspend {
		c.suspended(ctx, key, app)
		return 0, nil
	}
	start := c.opts.Clock.Now()
	at, after := c.attempt(ctx, key, app, retry)
	if at.Deferred {
		return after, nil
	}
	c.observe(app, at, start)
	at.RequestedAt = app.Annotations[v1alpha1.RequestedAtAnnotation]
	now := metav1.NewTime(c.opts.Clock.Now())
	if err := c.status.write(ctx, ns, name, statusOf(app.Status, app.Generation, at, now)); err != nil {
		return 0, err
	}
	c.logAttempt(key, at)
	c.events.attempt(app, at)
	c.alertAttempt(app, at)
	if at.Err != nil && after == 0 {
		return 0, at.Err
	}
	return after, nil
}

// attempt runs one App through the library. The duration is when to look
// again: the source's next poll after a success, requeueAfterInvalid
// after a failure only an edit can fix, the App's retry or its source's
// next poll, whichever is sooner, after a failed reconcile, 0 for
// another failure to retry with the work queue's backoff.
func (c *Controller) attempt(ctx context.Context, key string, app *v1alpha1.App, retry appRetry) (attempt, time.Duration) {
	ar, reason, err := c.prepare(ctx, key, app)
	if err != nil {
		return attempt{Reason: reason, Err: err}, requeueAfterInvalid
	}
	if app.Status.ObservedGeneration != app.Generation {
		if err := c.status.write(ctx, app.Namespace, app.Name, reconciling(app.Status, app.Generation)); err != nil {
			return attempt{Reason: v1alpha1.ReasonApplyFailed, Err: err}, 0
		}
	}
	if err := c.dependencyCycle(app); err != nil {
		return attempt{Reason: v1alpha1.ReasonDependencyCycle, Err: err}, requeueAfterInvalid
	}
	if err := c.dependencyWait(app); err != nil {
		return attempt{Reason: v1alpha1.ReasonDependencyNotReady, Err: err, Waiting: true}, dependencyRetry
	}
	return c.run(ctx, key, app, ar, retry)
}

// run polls the App's source and reconciles the revision (package
// reconcile's Reconciler, the file daemon's), unless the App backs off
// from a failure of that revision (the attempt is then Deferred): the
// duration is when to look again, as attempt says.
func (c *Controller) run(ctx context.Context, key string, app *v1alpha1.App, ar *appRunner, retry appRetry) (attempt, time.Duration) {
	cfgApp := ar.cfg.Apps[0]
	compiled, err := ar.runner.Compiled(cfgApp.Name)
	if err != nil {
		return attempt{Reason: v1alpha1.ReasonInvalidSpec, Err: err}, requeueAfterInvalid
	}
	rev, release, err := ar.runner.Poll(ctx, cfgApp)
	if err != nil {
		out := reconcile.Outcome{Result: reconcile.ResultFailed, Stage: reconcile.StageSource}
		return attempt{Reason: reconcile.ReasonOf(out, err), Err: err, Revision: c.revision(ar, nil),
			Result: out.Result, Stage: out.Stage}, 0
	}
	defer release()
	c.recordFetch(ctx, ar.src, rev)
	now := c.opts.Clock.Now()
	poll := pollAfter(ar.cfg.Sources[0], now)
	if retry.waits(rev.SHA, now) {
		return attempt{Deferred: true}, retry.lookAgain(now, poll)
	}
	retry.renew(rev.SHA)
	rc := c.reconcilerFor(key, app.Namespace, app.Name)
	out, err := rc.Reconcile(ctx, ar.runner, compiled, rev)
	if out.Rendered != nil {
		c.publishDrift(app.Namespace, app.Name, rc, out.Rendered.Plan.Revision)
	}
	at := attempt{Err: err, ChangeSet: out.ChangeSet, Revision: c.revision(ar, out.Rendered), Result: out.Result, Stage: out.Stage}
	if out.Rendered != nil && !out.Detect {
		at.Prune = out.Rendered.Prune
	}
	if out.Rendered != nil {
		at.Rendered, at.Warnings = true, out.Rendered.Plan.Warnings
	}
	at.Reason = reconcile.ReasonOf(out, err)
	if c.ownedByAnother(cfgApp.Name, err) {
		at.Reason, at.Err = v1alpha1.ReasonNameCollision, ownerRefusal(key, err)
		return at, requeueAfterInvalid
	}
	if err != nil {
		retry.Failed(rev.SHA, now)
		return at, retry.lookAgain(now, poll)
	}
	retry.Succeeded()
	return at, pollAfter(ar.cfg.Sources[0], c.opts.Clock.Now())
}

// prepare finds what an App needs before the library runs it: its name,
// its source and Secrets, its translated config and its Runner. The
// reason names what is missing.
func (c *Controller) prepare(ctx context.Context, key string, app *v1alpha1.App) (*appRunner, v1alpha1.Reason, error) {
	if err := c.claimName(app); err != nil {
		return nil, v1alpha1.ReasonNameCollision, err
	}
	if err := c.opts.Tenancy.checkSourceRef(app); err != nil {
		return nil, v1alpha1.ReasonCrossNamespaceRef, err
	}
	app, err := c.opts.Tenancy.withDefaults(app)
	if err != nil {
		return nil, v1alpha1.ReasonInvalidSpec, err
	}
	src, err := c.source(app)
	if err != nil {
		return nil, v1alpha1.ReasonSourceNotFound, err
	}
	if err := checkNetworkSource(src); err != nil {
		return nil, v1alpha1.ReasonInvalidSpec, err
	}
	c.watchReferencesOf(app, src)
	w, err := c.credentialsFor(app, src.Meta().Namespace)
	if err != nil {
		return nil, v1alpha1.ReasonInvalidSpec, err
	}
	creds, err := w.write(ctx, src)
	if err != nil {
		return nil, v1alpha1.ReasonSecretNotFound, err
	}
	w, err = c.credentialsFor(app, app.Namespace)
	if err != nil {
		return nil, v1alpha1.ReasonInvalidSpec, err
	}
	if creds.DecryptionKeysFile, err = w.writeDecryptionKeys(ctx, app); err != nil {
		return nil, v1alpha1.ReasonSecretNotFound, err
	}
	cfg, err := TranslateSource(app, src, creds)
	if err != nil {
		return nil, v1alpha1.ReasonInvalidSpec, err
	}
	managers := cfg.Apps[0].Managers()
	evicted, err := c.opts.Names.claimManagers(key, managers, c.managerContenders(key, app.CreationTimestamp.Time, managers))
	for _, k := range evicted {
		c.enqueueKey(k) // it held a manager this App holds: refused now
	}
	if err != nil {
		return nil, v1alpha1.ReasonNameCollision, err
	}
	ar, err := c.runnerFor(key, app, cfg)
	if err != nil {
		return nil, v1alpha1.ReasonInvalidSpec, err
	}
	ar.src = src
	return ar, "", nil
}

// source returns the source an App references.
func (c *Controller) source(app *v1alpha1.App) (Source, error) {
	ref := app.Spec.SourceRef
	ns := sourceNamespace(app)
	lister := c.sourceListers[ref.Kind]
	if lister == nil {
		return Source{}, fmt.Errorf("App %s/%s: spec.sourceRef.kind: %q is not a source kind; use GitSource, HelmSource or OCISource", app.Namespace, app.Name, ref.Kind)
	}
	obj, err := lister.ByNamespace(ns).Get(ref.Name)
	if apierrors.IsNotFound(err) {
		return Source{}, fmt.Errorf("App %s/%s: spec.sourceRef: %s %s/%s not found; create it, or fix the name", app.Namespace, app.Name, ref.Kind, ns, ref.Name)
	}
	if err != nil {
		return Source{}, err
	}
	return decodeSource(ref.Kind, obj)
}

// runnerFor returns the App's Runner, built anew when its translated
// config changed (the Git cache on disk is kept).
func (c *Controller) runnerFor(key string, app *v1alpha1.App, cfg *config.Config) (*appRunner, error) {
	data, err := json.Marshal(cfg)
	if err != nil {
		return nil, err
	}
	sum := sha256.Sum256(data)
	c.mu.Lock()
	defer c.mu.Unlock()
	if ar := c.runners[key]; ar != nil && ar.sum == sum {
		return ar, nil
	}
	dir, err := c.caches.dir(app.Namespace, app.Name, app.UID)
	if err != nil {
		return nil, fmt.Errorf("App %s: %w", key, err)
	}
	c.cacheDirs[key] = dir
	opts := c.opts.Runner
	opts.CacheDir = dir
	opts.Owner = ownerOf(key)
	// substituteFrom names ConfigMaps and Secrets of the App's namespace,
	// read as the App's service account: its team wrote the names.
	opts.Namespace = app.Namespace
	opts.VariablesAsTenant = true
	opts.Targets = c.targetsFor(key, app.Namespace)
	r, err := reconcile.New(cfg, c.opts.Cluster, opts)
	if err != nil {
		return nil, fmt.Errorf("App %s: %w", key, err)
	}
	ar := &appRunner{sum: sum, cfg: cfg, runner: r}
	c.runners[key] = ar
	return ar, nil
}

// revision is the label of the revision an attempt worked on: the
// rendered one, else the one the source last resolved.
func (c *Controller) revision(ar *appRunner, rendered *reconcile.Rendered) string {
	if rendered != nil && rendered.Plan != nil && rendered.Plan.Revision != "" {
		return rendered.Plan.Revision
	}
	if rev, ok := ar.runner.Source(ar.cfg.Sources[0].Name).Last(); ok {
		return rev.SHA
	}
	return ""
}

// pollAfter is when a source is next polled: its interval, or the next
// time of its schedule (a Git source's only).
func pollAfter(s config.Source, now time.Time) time.Duration {
	switch {
	case s.Helm != nil && s.Helm.Interval != nil:
		return s.Helm.Interval.Duration
	case s.OCI != nil && s.OCI.Interval != nil:
		return s.OCI.Interval.Duration
	case s.Helm != nil || s.OCI != nil:
		return requeueAfterInvalid
	}
	g := s.Git
	if g.Interval != nil {
		return g.Interval.Duration
	}
	sched, err := cron.ParseStandard(g.Schedule)
	if err != nil {
		return requeueAfterInvalid
	}
	return max(sched.Next(now).Sub(now), time.Second)
}

// forget drops what the controller keeps for an App that is gone: its
// Runner, its drift watcher, its name and its Git cache.
func (c *Controller) forget(key string) {
	c.stopReconciler(key)
	c.backoffs.forget(key)
	if ns, name, err := cache.SplitMetaNamespaceKey(key); err == nil && c.opts.Metrics != nil {
		c.opts.Metrics.Forget(AppName(ns, name))
	}
	c.mu.Lock()
	delete(c.runners, key)
	if ts := c.targets[key]; ts != nil {
		ts.Close()
		delete(c.targets, key)
	}
	dir := c.cacheDirs[key]
	delete(c.cacheDirs, key)
	c.mu.Unlock()
	c.opts.Names.release(key)
	c.enqueueNamesakes(key)
	if dir == "" {
		return // never cloned in this process; the next start's sweep removes it
	}
	if err := os.RemoveAll(dir); err != nil {
		c.log.Warn("the Git cache of a deleted App could not be removed", "app", key, "error", err)
	}
}

// targetsFor returns the App's own remote targets (c.mu held): the
// kubeconfig Secret of spec.cluster is read in the App's namespace, never
// syncd's, as the App's service account when it has one (every read,
// the prune on deletion's too: reconcile.Targets.ForAppObject), and no
// App shares a target with another. They are kept
// across Runner rebuilds (a changed kubeconfig makes a new target) and
// closed when the App is forgotten.
func (c *Controller) targetsFor(key, namespace string) *reconcile.Targets {
	if ts := c.targets[key]; ts != nil {
		return ts
	}
	ts := c.opts.Runner.Targets.ForAppObject(namespace)
	if ts != nil {
		c.targets[key] = ts
	}
	return ts
}

func (c *Controller) count(key string) {
	c.mu.Lock()
	c.reconciles[key]++
	c.mu.Unlock()
}

// logAttempt logs how an attempt ended.
func (c *Controller) logAttempt(key string, at attempt) {
	if at.Waiting {
		c.log.Info("App waits for its dependencies; not applied", "app", key, "waitingFor", message(at.Err))
		return
	}
	if at.Err != nil {
		c.log.Error("App reconcile failed", "app", key, "reason", string(at.Reason), "revision", at.Revision, "error", message(at.Err))
		return
	}
	c.log.Info("App reconciled", "app", key, "revision", at.Revision)
}

// credentialsDir is where GitSources' Secrets are written below the
// cache root.
func credentialsDir(root string) string { return filepath.Join(root, "credentials") }

// observe records an attempt in the per-app series, under the App's app
// name: an attempt that failed before the reconcile (its source, Secret
// or spec) is a failed result of no stage; one that waits for its
// dependencies is not a result.
func (c *Controller) observe(app *v1alpha1.App, at attempt, start time.Time) {
	if c.opts.Metrics == nil || at.Waiting {
		return
	}
	result := at.Result
	if result == "" {
		result = reconcile.ResultFailed
	}
	now := c.opts.Clock.Now()
	c.opts.Metrics.Reconciled(appmetrics.Reconcile{
		App: AppName(app.Namespace, app.Name), Cluster: clusterName(app),
		Result: result, Stage: at.Stage, Took: now.Sub(start), ChangeSet: at.ChangeSet, Now: now,
	})
}
