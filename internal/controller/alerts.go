package controller

import (
	"context"
	"fmt"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/util/workqueue"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/drift"
)

// An App's events reach the Alerts of its namespace that select it. The
// events are made by package alert from what the Reconciler reports
// (alert.DriftAlerts, alert.OverlapAlerts, alert.ChangeSetEvents,
// alert.PruneEvent, alert.Failures: the file daemon's code), and sent by
// one alert.Notifier per Ready Alert, built on its AlertProvider: the
// file daemon's notifier, with its formatting, dedupe, rate limit,
// redaction and retries. What differs is where the URL and key come
// from (the provider's Secret, read for every message: providerSecret)
// and which addresses it may reach (egress.TenantClient and
// egress.CheckTenantURL).

// alertRouter is the controller's alerting state.
type alertRouter struct {
	// queue holds the keys of Alerts ("alert:ns/name") and
	// AlertProviders ("provider:ns/name") to check.
	queue     workqueue.TypedRateLimitingInterface[string]
	alerts    cache.GenericLister
	providers cache.GenericLister

	mu sync.Mutex
	// sinks are the Ready Alerts' notifiers, by Alert key.
	sinks map[string]*alertSink
	// apps are the Apps' event trackers, by App key.
	apps map[string]*appAlerts
}

// alertSink is one Ready Alert: its notifier and what it was built from.
type alertSink struct {
	notifier *alert.Notifier
	spec     v1alpha1.AlertSpec
	// built is what a change of makes the notifier be built anew.
	built sinkVersion
}

// sinkVersion identifies the Alert and provider specs a notifier was
// built from.
type sinkVersion struct {
	alertGen, providerGen int64
	providerUID           string
}

// appAlerts turns one App's results into events. Drift and overlaps
// come from the drift watcher's goroutine, failures from the App's
// reconcile: each has its own lock.
type appAlerts struct {
	driftMu  sync.Mutex
	drift    alert.DriftAlerts
	overlaps alert.OverlapAlerts

	failMu    sync.Mutex
	failures  alert.Failures
	conflicts alert.ConflictAlerts
}

// alertsRecheck is how often an Alert's readiness is checked again
// when nothing it names changed (a Secret edit is seen at once when the
// Secrets of the namespace are watched; messages read it anyway).
const alertsRecheck = 5 * time.Minute

// Keys of the alert queue.
const (
	alertKeyPrefix    = "alert:"
	providerKeyPrefix = "provider:"
)

// newAlertRouter registers the Alert and AlertProvider informers when
// the API server serves them; without their CRDs the controller runs
// without alerts (nil).
func (c *Controller) newAlertRouter() (*alertRouter, error) {
	if !c.served(v1alpha1.AlertResource) || !c.served(v1alpha1.AlertProviderResource) {
		c.log.Info("Alert and AlertProvider CRDs are not installed; Apps send no alerts (syncd install installs them)")
		return nil, nil
	}
	r := &alertRouter{
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBase, retryMax),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "alerts"}),
		sinks: map[string]*alertSink{},
		apps:  map[string]*appAlerts{},
	}
	alerts := c.factory.ForResource(v1alpha1.AlertResource)
	providers := c.factory.ForResource(v1alpha1.AlertProviderResource)
	if err := handle(alerts.Informer(), r.alertChanged, updatedSpec(r.alertChanged)); err != nil {
		return nil, err
	}
	if err := handle(providers.Informer(), r.providerChanged, updatedSpec(r.providerChanged)); err != nil {
		return nil, err
	}
	r.alerts, r.providers = alerts.Lister(), providers.Lister()
	c.synced = append(c.synced, alerts.Informer().HasSynced, providers.Informer().HasSynced)
	return r, nil
}

// served reports whether the API server serves a resource of syncd's
// group (its CRD is installed). A mapper that caches discovery is reset
// and asked again before the answer is no: a controller built once
// syncd's CRDs were installed after it started would otherwise be told
// what discovery said before, and run without alerts.
func (c *Controller) served(gvr schema.GroupVersionResource) bool {
	m := c.opts.Cluster.Mapper
	if _, err := m.KindFor(gvr); err == nil {
		return true
	}
	r, ok := m.(meta.ResettableRESTMapper)
	if !ok {
		return false
	}
	r.Reset()
	_, err := m.KindFor(gvr)
	return err == nil
}

// updatedSpec calls changed for an update that is more than a status
// write (the controller's own writes do not queue the object again).
func updatedSpec(changed func(obj any)) func(old, cur any) {
	return func(old, cur any) {
		o, ok1 := old.(*unstructured.Unstructured)
		n, ok2 := cur.(*unstructured.Unstructured)
		if ok1 && ok2 && !specChanged(o, n) {
			return
		}
		changed(cur)
	}
}

// alertChanged queues an Alert that appeared, changed or went.
func (r *alertRouter) alertChanged(obj any) {
	if key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj); err == nil {
		r.queue.Add(alertKeyPrefix + key)
	}
}

// providerChanged queues an AlertProvider and the Alerts naming it.
func (r *alertRouter) providerChanged(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err != nil {
		return
	}
	r.queue.Add(providerKeyPrefix + key)
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return
	}
	r.queueAlertsOf(ns, func(p string) bool { return p == name })
}

// queueAlertsOf queues the Alerts of namespace whose provider matches.
func (r *alertRouter) queueAlertsOf(namespace string, provider func(name string) bool) {
	objs, err := r.alerts.ByNamespace(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	for _, o := range objs {
		a, err := fromInformer[v1alpha1.Alert](o)
		if err == nil && provider(a.Spec.ProviderRef.Name) {
			r.queue.Add(alertKeyPrefix + namespace + "/" + a.Name)
		}
	}
}

// secretChanged queues the AlertProviders of namespace whose Secret is
// name, and their Alerts.
func (r *alertRouter) secretChanged(namespace, name string) {
	if r == nil {
		return
	}
	objs, err := r.providers.ByNamespace(namespace).List(labels.Everything())
	if err != nil {
		return
	}
	using := map[string]bool{}
	for _, o := range objs {
		p, err := fromInformer[v1alpha1.AlertProvider](o)
		if err == nil && p.Spec.SecretRef.Name == name {
			using[p.Name] = true
			r.queue.Add(providerKeyPrefix + namespace + "/" + p.Name)
		}
	}
	r.queueAlertsOf(namespace, func(p string) bool { return using[p] })
}

// runAlerts checks queued Alerts and AlertProviders until ctx ends, then
// flushes and stops every notifier.
func (c *Controller) runAlerts(ctx context.Context) {
	r := c.alertRouter
	go func() {
		<-ctx.Done()
		r.queue.ShutDown()
	}()
	for c.nextAlert(ctx) {
	}
	r.mu.Lock()
	sinks := r.sinks
	r.sinks = map[string]*alertSink{}
	r.mu.Unlock()
	for _, s := range sinks {
		closeAlertNotifier(s.notifier)
	}
}

// nextAlert checks one queued Alert or AlertProvider; false once the
// queue shut down.
func (c *Controller) nextAlert(ctx context.Context) bool {
	r := c.alertRouter
	key, quit := r.queue.Get()
	if quit {
		return false
	}
	defer r.queue.Done(key)
	var err error
	switch {
	case len(key) > len(alertKeyPrefix) && key[:len(alertKeyPrefix)] == alertKeyPrefix:
		err = c.reconcileAlert(ctx, key[len(alertKeyPrefix):])
	case len(key) > len(providerKeyPrefix) && key[:len(providerKeyPrefix)] == providerKeyPrefix:
		err = c.reconcileProvider(ctx, key[len(providerKeyPrefix):])
	}
	switch {
	case ctx.Err() != nil:
	case err != nil:
		c.log.Warn("alert object not checked; retrying", "object", key, "error", message(err))
		r.queue.AddRateLimited(key)
	default:
		r.queue.Forget(key)
		r.queue.AddAfter(key, alertsRecheck)
	}
	return true
}

// closeAlertNotifier flushes a notifier's queued messages in the
// background, giving up after 5s.
func closeAlertNotifier(n *alert.Notifier) {
	go func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		_ = n.Close(ctx)
	}()
}

// setSink installs (or, with nil, removes) an Alert's notifier, closing
// the one it replaces.
func (r *alertRouter) setSink(key string, s *alertSink) {
	r.mu.Lock()
	old := r.sinks[key]
	if s == nil {
		delete(r.sinks, key)
	} else {
		r.sinks[key] = s
	}
	r.mu.Unlock()
	if old != nil && (s == nil || old.notifier != s.notifier) {
		closeAlertNotifier(old.notifier)
	}
}

// sink returns an Alert's current notifier entry.
func (r *alertRouter) sink(key string) *alertSink {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.sinks[key]
}

// trackerOf returns the App's event trackers, made on first use.
func (r *alertRouter) trackerOf(appKey string) *appAlerts {
	r.mu.Lock()
	defer r.mu.Unlock()
	t := r.apps[appKey]
	if t == nil {
		t = &appAlerts{}
		r.apps[appKey] = t
	}
	return t
}

// forgetAppAlerts drops a deleted App's trackers.
func (c *Controller) forgetAppAlerts(appKey string) {
	r := c.alertRouter
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	delete(r.apps, appKey)
}

// alertDrift sends the alerts of a change of an App's drift findings.
func (c *Controller) alertDrift(namespace, name string, d drift.Delta) {
	r := c.alertRouter
	if r == nil {
		return
	}
	t := r.trackerOf(namespace + "/" + name)
	t.driftMu.Lock()
	evs := append(t.drift.Events(d), t.overlaps.Events(d)...)
	t.driftMu.Unlock()
	c.sendAppEvents(namespace, name, evs)
}

// alertAttempt sends the alerts of how one reconcile of an App ended:
// hand-offs and the sync of its change set, its conflicts and their
// resolution, its prune, and its failure or the recovery after one. An
// App waiting for its dependencies has not failed. A failure of the
// App's source is one of its failures (the poll is part of the attempt):
// a later failure of another cause supersedes it, the next success
// resolves it.
func (c *Controller) alertAttempt(app *v1alpha1.App, at attempt) {
	r := c.alertRouter
	if r == nil {
		return
	}
	key := app.Namespace + "/" + app.Name
	now := c.opts.Clock.Now()
	var evs []alert.Event
	if at.ChangeSet != nil {
		evs = append(evs, alert.ChangeSetEvents(key, at.ChangeSet, now)...)
	}
	if out := alert.ClassifyPrune(at.Prune); out == alert.PruneRemoved || out == alert.PruneRefused {
		evs = append(evs, alert.PruneEvent(key, at.Revision, at.Prune, out, now))
	}
	t := r.trackerOf(key)
	t.failMu.Lock()
	evs = append(evs, t.conflicts.Events(key, at.ChangeSet, now)...)
	if !at.Waiting {
		evs = append(evs, t.failures.Events(alert.Attempt{App: key, Revision: at.Revision, Stage: at.Stage, Result: at.Result, Reason: string(at.Reason), Err: at.Err, At: now})...)
	}
	t.failMu.Unlock()
	c.sendAppEvents(app.Namespace, app.Name, evs)
}

// sendAppEvents hands an App's events to the notifier of every Ready,
// unsuspended Alert of its namespace that selects it. The events are
// named by the App's namespace/name, whichever app name the drift
// watcher used.
func (c *Controller) sendAppEvents(namespace, name string, evs []alert.Event) {
	if len(evs) == 0 {
		return
	}
	lbls, ok := c.appLabels(namespace, name)
	if !ok {
		return
	}
	for _, n := range c.alertRouter.notifiersFor(namespace, name, lbls) {
		for _, ev := range evs {
			ev.App = namespace + "/" + name
			n.Notify(ev)
		}
	}
}

// appLabels returns the labels of the App namespace/name; false when it
// is not in the cache.
func (c *Controller) appLabels(namespace, name string) (map[string]string, bool) {
	obj, err := c.apps.ByNamespace(namespace).Get(name)
	if err != nil {
		return nil, false
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, false
	}
	return u.GetLabels(), true
}

// notifiersFor returns the notifiers of the Alerts of namespace that
// select the App name with labels lbls. Only Alerts of the App's own
// namespace are looked at.
func (r *alertRouter) notifiersFor(namespace, name string, lbls map[string]string) []*alert.Notifier {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []*alert.Notifier
	for key, s := range r.sinks {
		ns, _, err := cache.SplitMetaNamespaceKey(key)
		if err != nil || ns != namespace || s.spec.Suspend {
			continue
		}
		if selectsApp(s.spec.EventSources, name, lbls) {
			out = append(out, s.notifier)
		}
	}
	return out
}

// selectsApp reports whether any of sources selects the App name with
// labels lbls: by its name, by "*", by matchLabels (with "*" or no
// name).
func selectsApp(sources []v1alpha1.AppSelector, name string, lbls map[string]string) bool {
	for _, s := range sources {
		if s.Kind != "" && s.Kind != v1alpha1.KindApp {
			continue
		}
		if s.Name != "" && s.Name != "*" && s.Name != name {
			continue
		}
		if labels.SelectorFromSet(s.MatchLabels).Matches(labels.Set(lbls)) {
			return true
		}
	}
	return false
}

// getAlertObject reads an Alert or AlertProvider from its lister; nil
// without error when it is gone.
func getAlertObject[T any](l cache.GenericLister, key string) (*T, error) {
	ns, name, err := cache.SplitMetaNamespaceKey(key)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", key, err)
	}
	obj, err := l.ByNamespace(ns).Get(name)
	if apierrors.IsNotFound(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return fromInformer[T](obj)
}
