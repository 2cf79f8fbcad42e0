package livecache

import (
	"context"
	"errors"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
)

// ErrStopped is returned by Acquire once the Cache has stopped.
var ErrStopped = errors.New("live cache: stopped")

// ErrOtherCluster is wrapped by the error of an Acquire whose Key names
// another cluster than the Cache's.
var ErrOtherCluster = errors.New("live cache: key of another cluster")

// Key names one informer: the objects of one resource in one namespace
// ("" for a cluster-scoped resource or every namespace) of Cluster that
// match the selectors, as listed and watched by User ("" for syncd's own
// identity).
type Key struct {
	// Cluster is the name of the cluster the informer lists and watches,
	// as the target that owns the Cache calls it ("local",
	// config.LocalCluster, for syncd's own). A Cache holds the informers
	// of one cluster and refuses keys of another.
	Cluster       string
	Resource      schema.GroupVersionResource
	Namespace     string
	LabelSelector string
	FieldSelector string
	User          string
}

// Informers is what the Cache's holders take from it: an informer, held
// from Acquire to Release. The inventory and the drift watcher take the
// same two methods of the same Cache, handed from one to the other
// (inventory.Manager.LiveCache feeds drift.WatcherOptions.Cache), so the
// interface is declared once here, the way controller-runtime's cache
// package declares Informers for all of its consumers, rather than once
// in each consumer.
type Informers interface {
	Acquire(k Key, client dynamic.Interface) (*Informer, error)
	Release(i *Informer)
	// Cluster returns the name of the cluster whose informers it holds.
	Cluster() string
}

var _ Informers = (*Cache)(nil)

// Cache holds the informers of one cluster, the way gitops-engine keeps
// one cluster cache per cluster. The zero value is not ready; use New.
type Cache struct {
	cluster string

	mu        sync.Mutex
	informers map[Key]*Informer
	stopped   bool
}

// New returns an empty Cache of the informers of cluster (its name, see
// Key.Cluster).
func New(cluster string) *Cache {
	return &Cache{cluster: cluster, informers: map[Key]*Informer{}}
}

// Cluster returns the name of the Cache's cluster.
func (c *Cache) Cluster() string { return c.cluster }

// Acquire returns the informer of k, started (listing and watching through
// client) unless it runs already; it does not wait for it to sync. Every
// Acquire is paired with a Release. client is only used to start it: it
// must talk to k.Cluster, and the holders of one Key must share its User.
// A Key of another cluster than the Cache's is refused (ErrOtherCluster):
// its holder must take that cluster's Cache, so that informers of two
// clusters are never shared.
func (c *Cache) Acquire(k Key, client dynamic.Interface) (*Informer, error) {
	if k.Cluster != c.cluster {
		return nil, fmt.Errorf("%w: %s in namespace %q of cluster %q asked of the live cache of cluster %q", ErrOtherCluster, k.Resource, k.Namespace, k.Cluster, c.cluster)
	}
	if sel, err := labels.Parse(k.LabelSelector); err == nil {
		// One spelling per selector, so that holders who write it
		// differently share the informer.
		k.LabelSelector = sel.String()
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.stopped {
		return nil, ErrStopped
	}
	if i := c.informers[k]; i != nil {
		i.refs++
		return i, nil
	}
	i, err := start(k, client)
	if err != nil {
		return nil, err
	}
	i.refs = 1
	c.informers[k] = i
	return i, nil
}

// Release gives up one hold on i; the last one stops it.
func (c *Cache) Release(i *Informer) {
	if i == nil {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	i.refs--
	if i.refs > 0 || c.informers[i.key] != i {
		return
	}
	delete(c.informers, i.key)
	i.cancel()
}

// Stop stops every informer; later Acquires fail with ErrStopped.
func (c *Cache) Stop() {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range c.informers {
		i.cancel()
	}
	c.informers = map[Key]*Informer{}
	c.stopped = true
}

// Informer is one shared informer of the Cache.
type Informer struct {
	key    Key
	inf    cache.SharedIndexInformer
	cancel context.CancelFunc
	refs   int // guarded by the Cache's mu
	// shared is what its objects' metadata shares (sharedMeta).
	shared *sharedMeta

	mu        sync.Mutex
	forbidden bool
	handlers  map[int]func(error)
	next      int
}

// start makes and runs the informer of k.
func start(k Key, client dynamic.Interface) (*Informer, error) {
	inf := dynamicinformer.NewFilteredDynamicInformer(client, k.Resource, k.Namespace, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.LabelSelector = k.LabelSelector
		o.FieldSelector = k.FieldSelector
	}).Informer()
	i := &Informer{key: k, inf: inf, handlers: map[int]func(error){}, shared: &sharedMeta{}}
	if err := inf.SetTransform(i.shared.transform); err != nil {
		return nil, err
	}
	if err := inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) { i.watchError(err) }); err != nil {
		return nil, err
	}
	ctx, cancel := context.WithCancel(context.Background())
	i.cancel = cancel
	go inf.RunWithContext(ctx)
	return i, nil
}

// Key returns the informer's key.
func (i *Informer) Key() Key { return i.key }

// HasSynced reports whether the informer has listed.
func (i *Informer) HasSynced() bool { return i.inf.HasSynced() }

// WaitForSync waits until the informer has listed or ctx is done, and
// reports whether it has listed.
func (i *Informer) WaitForSync(ctx context.Context) bool {
	return cache.WaitForCacheSync(ctx.Done(), i.inf.HasSynced)
}

// Get returns the cached object name (in the Key's namespace, or ns for an
// informer of every namespace); ok is false when the informer does not
// hold it. The Object is shared: never modify it.
func (i *Informer) Get(namespace, name string) (*Object, bool) {
	key := name
	if namespace != "" {
		key = namespace + "/" + name
	}
	item, exists, err := i.inf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	o, ok := item.(*Object)
	return o, ok
}

// List returns every cached object (shared: never modify them).
func (i *Informer) List() []*Object {
	items := i.inf.GetStore().List()
	out := make([]*Object, 0, len(items))
	for _, item := range items {
		if o, ok := item.(*Object); ok {
			out = append(out, o)
		}
	}
	return out
}

// AddEventHandler adds h; it is called with *Object values (or
// cache.DeletedFinalStateUnknown holding one), first with an Add for every
// object already cached.
func (i *Informer) AddEventHandler(h cache.ResourceEventHandler) (cache.ResourceEventHandlerRegistration, error) {
	return i.inf.AddEventHandler(h)
}

// RemoveEventHandler removes a handler AddEventHandler added.
func (i *Informer) RemoveEventHandler(r cache.ResourceEventHandlerRegistration) error {
	return i.inf.RemoveEventHandler(r)
}

// OnWatchError calls f with every later list or watch error of the
// informer (it retries by itself) until remove is called.
func (i *Informer) OnWatchError(f func(error)) (remove func()) {
	i.mu.Lock()
	defer i.mu.Unlock()
	n := i.next
	i.next++
	i.handlers[n] = f
	return func() {
		i.mu.Lock()
		delete(i.handlers, n)
		i.mu.Unlock()
	}
}

// Forbidden reports whether the informer's last list or watch error was
// Forbidden (its User's RBAC) and it has not listed since.
func (i *Informer) Forbidden() bool {
	i.mu.Lock()
	defer i.mu.Unlock()
	return i.forbidden && !i.inf.HasSynced()
}

func (i *Informer) watchError(err error) {
	i.mu.Lock()
	i.forbidden = apierrors.IsForbidden(err)
	fs := make([]func(error), 0, len(i.handlers))
	for _, f := range i.handlers {
		fs = append(fs, f)
	}
	i.mu.Unlock()
	for _, f := range fs {
		f(err)
	}
}

// NewStatic returns an informer of k that never lists or watches: its
// objects are put by hand (Put), for tests of consumers whose objects the
// API server would refuse. It is not in any Cache.
func NewStatic(k Key) *Informer {
	inf := cache.NewSharedIndexInformer(&cache.ListWatch{}, &unstructured.Unstructured{}, 0, cache.Indexers{})
	return &Informer{key: k, inf: inf, cancel: func() {}, handlers: map[int]func(error){}, shared: &sharedMeta{}}
}

// Put stores u as the informer's transform would (no event is sent).
func (i *Informer) Put(u *unstructured.Unstructured) error {
	o, err := i.shared.transform(u)
	if err != nil {
		return err
	}
	return i.inf.GetStore().Update(o)
}
