package inventory

import (
	"context"
	"fmt"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/livecache"
	"syncd.dev/syncd/internal/planner"
)

// watchKey names one informer: the members of one ApplySet of one
// resource in one namespace ("" for cluster-scoped resources), as watched
// by one user (identity.User of the app; "" for syncd's own).
type watchKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	id        string
	user      string
}

// cacheKey is the live cache's key of k on cluster: the members are
// selected by their part-of label.
func (k watchKey) cacheKey(cluster string) livecache.Key {
	return livecache.Key{
		Cluster:       cluster,
		Resource:      k.gvr,
		Namespace:     k.namespace,
		LabelSelector: labels.Set{LabelPartOf: k.id}.AsSelector().String(),
		User:          k.user,
	}
}

// watch is one informer the tracker holds; failed watches (no list/watch
// permission, a resource gone) are remembered so reads fall back to GETs
// without waiting again.
type watch struct {
	inf    *livecache.Informer
	failed error
}

// tracker holds the live cache's informers of the members syncd applied,
// one per resource, namespace and ApplySet, acquired once per process and
// label-selected by part-of, so that reading an unchanged object costs no
// request. Each informer lists and watches through the client of the app
// it is for, so a tenant's watch needs the tenant's own permission.
type tracker struct {
	cluster     string // the cache's keys' Cluster
	syncTimeout time.Duration
	cache       livecache.Informers
	// own is set when the tracker made the cache itself and stops it.
	own *livecache.Cache

	mu      sync.Mutex
	watches map[watchKey]*watch
	done    bool
}

// newTracker returns a tracker of cluster's members over c, or over a
// cache of its own when c is nil.
func newTracker(cluster string, syncTimeout time.Duration, c livecache.Informers) *tracker {
	t := &tracker{cluster: cluster, syncTimeout: syncTimeout, cache: c, watches: map[watchKey]*watch{}}
	if c == nil {
		t.own = livecache.New(cluster)
		t.cache = t.own
	}
	return t
}

// ensure acquires the informer for k, listing and watching through client
// (the app's), unless the tracker holds it already, and waits until it
// has listed (at most syncTimeout). A watch that cannot sync is released
// and remembered as failed; its reads then go to the API server.
func (t *tracker) ensure(ctx context.Context, k watchKey, client dynamic.Interface) *watch {
	t.mu.Lock()
	if w, ok := t.watches[k]; ok || t.done {
		t.mu.Unlock()
		return w
	}
	inf, err := t.cache.Acquire(k.cacheKey(t.cluster), client)
	w := &watch{inf: inf, failed: err}
	t.watches[k] = w
	t.mu.Unlock()
	if err != nil {
		return w
	}

	sctx, scancel := context.WithTimeout(ctx, t.syncTimeout)
	defer scancel()
	if !inf.WaitForSync(sctx) {
		t.cache.Release(inf)
		t.mu.Lock()
		w.failed = fmt.Errorf("watch %s in %q did not sync within %s", k.gvr, k.namespace, t.syncTimeout)
		if ctx.Err() != nil {
			// Cancelled by the caller, not the informer's fault: try
			// again next time.
			delete(t.watches, k)
		}
		t.mu.Unlock()
	}
	return w
}

// get returns the cached metadata of name in the informer for k; ok is
// false when the informer is absent, failed, or does not hold it. The
// metadata is the cache's: never modify it.
func (t *tracker) get(k watchKey, name string) (*metav1.PartialObjectMetadata, bool) {
	t.mu.Lock()
	w := t.watches[k]
	t.mu.Unlock()
	if w == nil || w.failed != nil {
		return nil, false
	}
	o, ok := w.inf.Get(k.namespace, name)
	if !ok {
		return nil, false
	}
	return o.Metadata(), true
}

// stop releases every informer (and stops the cache if it is the
// tracker's own).
func (t *tracker) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.watches {
		if w.failed == nil {
			t.cache.Release(w.inf)
		}
	}
	t.watches = map[watchKey]*watch{}
	t.done = true
	if t.own != nil {
		t.own.Stop()
	}
}

// toUnstructured turns cached metadata into an unstructured object of the
// ref's kind, as the applier's LiveReader returns it.
func toUnstructured(ref planner.ObjectRef, pom *metav1.PartialObjectMetadata) (*unstructured.Unstructured, error) {
	m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(pom)
	if err != nil {
		return nil, fmt.Errorf("%s: convert cached metadata: %w", ref, err)
	}
	u := &unstructured.Unstructured{Object: m}
	u.SetGroupVersionKind(ref.GVK())
	return u, nil
}
