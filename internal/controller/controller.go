package controller

import (
	"context"
	"errors"
	"log/slog"
	"path/filepath"
	"sync"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/tools/cache"
	"k8s.io/client-go/tools/record"
	"k8s.io/client-go/util/workqueue"
	"k8s.io/utils/clock"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appmetrics"
	"syncd.dev/syncd/internal/reconcile"
)

// DefaultWorkers is how many Apps reconcile at once when Options.Workers
// is zero.
const DefaultWorkers = 4

// Options configure a Controller.
type Options struct {
	// Cluster is where Apps are applied; its Dynamic client also reads
	// and writes the App and GitSource objects (required).
	Cluster reconcile.Cluster
	// Runner are the settings of every App's reconcile.Runner; CacheDir
	// is the root below which each App gets its own Git cache
	// (CacheDir/apps/<hash>, a keyed hash no other App can name:
	// cachedir.go) and each GitSource its credential files
	// (CacheDir/credentials/...).
	Runner reconcile.Options
	// Secrets reads the Secrets GitSources name (required).
	Secrets SecretReader
	// Names are the app names already taken by the file config's apps
	// (AppName collisions are refused on the App).
	Names *Names
	// InShard, when set, selects the Apps this process runs by their
	// AppName (the file daemon's --shards); the others are left alone.
	InShard func(appName string) bool
	// Events, when set, records Kubernetes Events on Apps.
	Events record.EventRecorder
	// Workers bounds the Apps reconciled at once (default
	// DefaultWorkers). One App is never reconciled by two workers.
	Workers int
	// Tenancy says what an App may reference and whom it runs as.
	Tenancy Tenancy
	// Metadata, when set, watches the Secrets GitSources and Apps name
	// and the ConfigMaps of Apps' substituteFrom (metadata only: names
	// and versions, never data), so an edit of one reconciles its users
	// at once (secrets.go).
	Metadata metadata.Interface
	// Alerts are the options of the notifiers of Alerts (alerts.go): the
	// Registerer of their metrics, limits and retries. The client
	// defaults to egress.TenantClient, and the URL check is always
	// egress.CheckTenantURL.
	Alerts alert.Options
	// Metrics are the per-app series the file daemon writes too; each
	// App's reconciles are recorded under its app name (nil: none).
	Metrics *appmetrics.Apps
	// Backoff is the retry backoff of a failed App (zero: 1 s doubling
	// to 5 min, each delay plus up to 10% at random). A poll of the
	// revision that failed waits for the retry; a new revision, an edit
	// or a request runs at once and starts it over (backoff.go).
	Backoff wait.Backoff
	// Logger receives structured logs (default slog.Default()).
	Logger *slog.Logger
	Clock  clock.Clock
}

// Controller reconciles App objects (package doc).
type Controller struct {
	opts  Options
	log   *slog.Logger
	queue workqueue.TypedRateLimitingInterface[string]
	// sourceQueue holds the sources whose status is to be checked.
	sourceQueue workqueue.TypedRateLimitingInterface[sourceKey]
	apps        cache.GenericLister
	// sourceListers are the listers of the source kinds, by kind.
	sourceListers map[string]cache.GenericLister
	synced        []cache.InformerSynced
	factory       dynamicinformer.DynamicSharedInformerFactory
	status        statusWriter
	creds         credentialWriter
	events        eventer
	// caches names the Apps' Git cache directories.
	caches *appCaches
	// backoffs are the failed Apps' retry backoffs (backoff.go).
	backoffs *backoffs

	mu      sync.Mutex
	runners map[string]*appRunner
	// cacheDirs are the Git cache directories of the Apps run (App key →
	// directory), removed when the App is forgotten.
	cacheDirs map[string]string
	// targets are the Apps' remote cluster targets (targetsFor).
	targets    map[string]*reconcile.Targets
	reconciles map[string]int
	// reconcilers are the Apps' Reconcilers (drift.go): their drift
	// watchers run in runCtx. findings are the drift counts each App's
	// status last showed.
	reconcilers map[string]*reconcile.Reconciler
	findings    map[string]driftCount
	runCtx      context.Context
	// alertRouter sends Apps' events to Alerts (alerts.go); nil when
	// the Alert CRDs are not served.
	alertRouter *alertRouter
	// metadataWatches are the "<resource>/<namespace>" whose objects'
	// metadata is watched (Secrets, ConfigMaps; secrets.go).
	metadataWatches map[string]bool
}

// New builds a Controller; Run starts it.
func New(opts Options) (*Controller, error) {
	switch {
	case opts.Cluster.Dynamic == nil || opts.Cluster.Mapper == nil:
		return nil, errors.New("controller: Cluster needs a dynamic client and a REST mapper")
	case opts.Secrets == nil:
		return nil, errors.New("controller: Secrets is required (GitSources name Secrets)")
	}
	if opts.Workers <= 0 {
		opts.Workers = DefaultWorkers
	}
	if opts.Logger == nil {
		opts.Logger = slog.Default()
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Runner.CacheDir == "" {
		opts.Runner.CacheDir = reconcile.DefaultCacheDir()
	}
	if opts.Names == nil {
		opts.Names = NewNames()
	}
	if opts.Backoff == (wait.Backoff{}) {
		opts.Backoff = defaultBackoff()
	}
	c := &Controller{
		opts:            opts,
		log:             opts.Logger,
		status:          statusWriter{dyn: opts.Cluster.Dynamic},
		creds:           credentialWriter{secrets: opts.Secrets, dir: credentialsDir(opts.Runner.CacheDir)},
		events:          eventer{rec: opts.Events},
		caches:          &appCaches{root: filepath.Join(opts.Runner.CacheDir, "apps")},
		backoffs:        newBackoffs(opts.Backoff),
		runners:         map[string]*appRunner{},
		cacheDirs:       map[string]string{},
		targets:         map[string]*reconcile.Targets{},
		reconciles:      map[string]int{},
		reconcilers:     map[string]*reconcile.Reconciler{},
		findings:        map[string]driftCount{},
		metadataWatches: map[string]bool{},
		queue: workqueue.NewTypedRateLimitingQueueWithConfig(
			workqueue.NewTypedMaxOfRateLimiter(
				workqueue.NewTypedItemExponentialFailureRateLimiter[string](retryBase, retryMax),
				&workqueue.TypedBucketRateLimiter[string]{Limiter: rate.NewLimiter(rate.Limit(10), 100)}),
			workqueue.TypedRateLimitingQueueConfig[string]{Name: "apps"}),
	}
	c.sourceQueue = workqueue.NewTypedRateLimitingQueueWithConfig(
		workqueue.NewTypedItemExponentialFailureRateLimiter[sourceKey](retryBase, retryMax),
		workqueue.TypedRateLimitingQueueConfig[sourceKey]{Name: "sources"})
	c.factory = dynamicinformer.NewDynamicSharedInformerFactory(opts.Cluster.Dynamic, 0)
	apps := c.factory.ForResource(v1alpha1.AppResource)
	if err := handle(apps.Informer(), c.appChanged, c.appUpdated); err != nil {
		return nil, err
	}
	c.apps = apps.Lister()
	c.synced = []cache.InformerSynced{apps.Informer().HasSynced}
	c.sourceListers = map[string]cache.GenericLister{}
	for _, k := range sourceKinds {
		inf := c.factory.ForResource(k.resource)
		if err := handle(inf.Informer(), c.sourceChanged(k.kind), c.sourceUpdated(k.kind)); err != nil {
			return nil, err
		}
		c.sourceListers[k.kind] = inf.Lister()
		c.synced = append(c.synced, inf.Informer().HasSynced)
	}
	var err error
	if c.alertRouter, err = c.newAlertRouter(); err != nil {
		return nil, err
	}
	return c, nil
}

// Run starts the informers and the workers and blocks until ctx ends;
// then it waits for the reconciles in flight.
func (c *Controller) Run(ctx context.Context) error {
	defer c.queue.ShutDown()
	defer c.sourceQueue.ShutDown()
	c.factory.Start(ctx.Done())
	defer c.factory.Shutdown()
	if !cache.WaitForCacheSync(ctx.Done(), c.synced...) {
		return errors.New("controller: the caches of Apps and sources did not sync")
	}
	c.mu.Lock()
	c.runCtx = ctx
	c.mu.Unlock()
	c.sweepCaches()
	c.log.Info("App controller started", "workers", c.opts.Workers)
	var wg sync.WaitGroup
	for range c.opts.Workers {
		wg.Go(func() {
			for c.next(ctx) {
			}
		})
	}
	wg.Go(func() {
		for c.nextSource(ctx) {
		}
	})
	if c.alertRouter != nil {
		wg.Go(func() { c.runAlerts(ctx) })
	}
	<-ctx.Done()
	c.queue.ShutDown()
	c.sourceQueue.ShutDown()
	wg.Wait()
	return nil
}

// next reconciles one queued App; false once the queue shut down.
func (c *Controller) next(ctx context.Context) bool {
	key, quit := c.queue.Get()
	if quit {
		return false
	}
	defer c.queue.Done(key)
	after, err := c.reconcile(ctx, key)
	switch {
	case ctx.Err() != nil:
	case err != nil:
		c.queue.AddRateLimited(key)
	default:
		c.queue.Forget(key)
		if after > 0 {
			c.queue.AddAfter(key, after)
		}
	}
	return true
}

// Reconciles returns how many reconciles of the App namespace/name have
// run (for tests and /status).
func (c *Controller) Reconciles(namespace, name string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.reconciles[namespace+"/"+name]
}

// enqueue queues an App an event names (enqueueKey).
func (c *Controller) enqueue(obj any) {
	key, err := cache.DeletionHandlingMetaNamespaceKeyFunc(obj)
	if err == nil {
		c.enqueueKey(key)
	}
}

// enqueueKey queues the App key for an event (an edit of it or of what
// it names, a request): it runs at once, even while it backs off from a
// failure (backoff.go).
func (c *Controller) enqueueKey(key string) {
	c.backoffs.request(key)
	c.queue.Add(key)
}

// appChanged is the add and delete handler of Apps: it queues the App
// and the check of its source (recheckSourceOf).
func (c *Controller) appChanged(obj any) {
	c.enqueue(obj)
	c.recheckSourceOf(obj)
}

// appUpdated queues an App whose spec, deletion or metadata changed, and
// the checks of the sources it used and uses; the controller's own
// status writes do not queue it again, but queue the Apps that depend
// on it when they change its readiness.
func (c *Controller) appUpdated(oldObj, newObj any) {
	o, ok1 := oldObj.(*unstructured.Unstructured)
	n, ok2 := newObj.(*unstructured.Unstructured)
	if ok1 && ok2 && readinessChanged(o, n) {
		c.enqueueDependents(n)
	}
	if ok1 && ok2 && !specChanged(o, n) {
		return
	}
	c.enqueue(newObj)
	c.recheckSourceOf(oldObj)
	c.recheckSourceOf(newObj)
}

// recheckSourceOf queues the check of the source an App references: the
// check reads the source's Secrets as the Apps using it do
// (sourceReaders), so an App that appears, goes, or changes its source
// or service account changes it.
func (c *Controller) recheckSourceOf(obj any) {
	if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
		obj = d.Obj
	}
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return
	}
	app, err := appFrom(u)
	if err != nil || c.sourceListers[app.Spec.SourceRef.Kind] == nil {
		return
	}
	c.sourceQueue.Add(sourceKey{Kind: app.Spec.SourceRef.Kind, Namespace: sourceNamespace(app), Name: app.Spec.SourceRef.Name})
}

// specChanged reports whether an update is more than a status write.
func specChanged(o, n *unstructured.Unstructured) bool {
	return o.GetGeneration() != n.GetGeneration() ||
		(n.GetDeletionTimestamp() != nil) != (o.GetDeletionTimestamp() != nil) ||
		!equalStrings(o.GetAnnotations(), n.GetAnnotations()) ||
		!equalStrings(o.GetLabels(), n.GetLabels())
}

func equalStrings(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
}

// sourceUpdated is the update handler of a source kind: it queues a
// source whose spec or metadata changed (not the controller's own
// status writes), and its Apps.
func (c *Controller) sourceUpdated(kind string) func(oldObj, newObj any) {
	changed := c.sourceChanged(kind)
	return func(oldObj, newObj any) {
		o, ok1 := oldObj.(*unstructured.Unstructured)
		n, ok2 := newObj.(*unstructured.Unstructured)
		if ok1 && ok2 && !specChanged(o, n) {
			return
		}
		changed(newObj)
	}
}

// sourceChanged is the add and delete handler of a source kind: it
// queues the source and every App that references it (of any
// namespace: cross-namespace references may be allowed).
func (c *Controller) sourceChanged(kind string) func(obj any) {
	return func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		src, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		c.sourceQueue.Add(sourceKey{Kind: kind, Namespace: src.GetNamespace(), Name: src.GetName()})
		c.enqueueUsers(sourceKey{Kind: kind, Namespace: src.GetNamespace(), Name: src.GetName()})
	}
}

// enqueueUsers queues the Apps that reference the source key.
func (c *Controller) enqueueUsers(key sourceKey) {
	objs, err := c.apps.List(everything)
	if err != nil {
		return
	}
	for _, o := range objs {
		app, err := appFrom(o)
		if err == nil && references(app, key) {
			c.enqueue(o)
		}
	}
}

// references reports whether the App's sourceRef names the source key.
func references(app *v1alpha1.App, key sourceKey) bool {
	ref := app.Spec.SourceRef
	return ref.Kind == key.Kind && ref.Name == key.Name && sourceNamespace(app) == key.Namespace
}

// handle registers the handlers of a custom resource's informer:
// changed for an object that appears or goes, updated for a change of
// one.
func handle(inf cache.SharedIndexInformer, changed func(obj any), updated func(old, cur any)) error {
	_, err := inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    changed,
		UpdateFunc: updated,
		DeleteFunc: changed,
	})
	return err
}

// appFrom converts an informer's object into an App.
func appFrom(obj runtime.Object) (*v1alpha1.App, error) {
	return fromInformer[v1alpha1.App](obj)
}

// fromInformer converts an informer's object (unstructured) into the
// typed object T, an App or a source.
func fromInformer[T any](obj runtime.Object) (*T, error) {
	u, ok := obj.(*unstructured.Unstructured)
	if !ok {
		return nil, errors.New("controller: not an unstructured object")
	}
	out := new(T)
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, out); err != nil {
		return nil, err
	}
	return out, nil
}

// A failed App (and a source whose check failed) is retried after
// retryBase, doubling per failure up to retryMax (the file daemon's
// backoff: 5 s to 5 min would make a test wait; a retry costs one Git
// poll).
const (
	retryBase = time.Second
	retryMax  = 5 * time.Minute
)

// requeueAfterInvalid is how long an App waits before it is looked at
// again when it cannot run until someone edits it or what it names (an
// edit queues it at once; this is only a safety net).
const requeueAfterInvalid = 5 * time.Minute

// sweepCaches removes the Git caches of Apps that no longer exist (and
// those of the layout before hashed names), before any App runs.
func (c *Controller) sweepCaches() {
	objs, err := c.apps.List(everything)
	if err != nil {
		c.log.Warn("the Git caches of deleted Apps were not swept", "error", err)
		return
	}
	keep := map[string]bool{}
	for _, o := range objs {
		m, err := meta.Accessor(o)
		if err != nil {
			continue
		}
		dir, err := c.caches.dir(m.GetNamespace(), m.GetName(), m.GetUID())
		if err != nil {
			c.log.Warn("the Git caches of deleted Apps were not swept", "error", err)
			return
		}
		keep[dir] = true
	}
	if err := c.caches.sweep(keep); err != nil {
		c.log.Warn("the Git caches of deleted Apps were not all removed", "error", err)
	}
}
