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
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/metadata/metadatainformer"
	"k8s.io/client-go/tools/cache"

	"syncd.dev/syncd/internal/planner"
)

// watchKey names one metadata-only informer: the members of one ApplySet
// of one resource in one namespace ("" for cluster-scoped resources), as
// watched by one user (identity.User of the app; "" for syncd's own).
type watchKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	id        string
	user      string
}

// watch is one informer; failed watches (no list/watch permission, a
// resource gone) are remembered so reads fall back to GETs without
// waiting again.
type watch struct {
	inf    cache.SharedIndexInformer
	cancel context.CancelFunc
	failed error
}

// tracker keeps metadata-only informers of the members syncd applied, one
// per resource, namespace and ApplySet, started once per process and
// label-selected by part-of, so that reading an unchanged object costs no
// request. Each informer lists and watches through the client of the app
// it is for, so a tenant's watch needs the tenant's own permission.
type tracker struct {
	syncTimeout time.Duration

	mu      sync.Mutex
	watches map[watchKey]*watch
	done    bool
}

func newTracker(syncTimeout time.Duration) *tracker {
	return &tracker{syncTimeout: syncTimeout, watches: map[watchKey]*watch{}}
}

// ensure starts the informer for k, listing and watching through md (the
// app's client), unless it runs already, and waits until
// it has listed (at most syncTimeout). A watch that cannot sync is stopped
// and remembered as failed; its reads then go to the API server.
func (t *tracker) ensure(ctx context.Context, k watchKey, md metadata.Interface) *watch {
	t.mu.Lock()
	if w, ok := t.watches[k]; ok || t.done {
		t.mu.Unlock()
		return w
	}
	selector := labels.Set{LabelPartOf: k.id}.AsSelector().String()
	inf := metadatainformer.NewFilteredMetadataInformer(md, k.gvr, k.namespace, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.LabelSelector = selector
	}).Informer()
	wctx, cancel := context.WithCancel(context.Background())
	w := &watch{inf: inf, cancel: cancel}
	t.watches[k] = w
	t.mu.Unlock()

	go inf.RunWithContext(wctx)
	sctx, scancel := context.WithTimeout(ctx, t.syncTimeout)
	defer scancel()
	if !cache.WaitForCacheSync(sctx.Done(), inf.HasSynced) {
		cancel()
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
// false when the informer is absent, failed, or does not hold it.
func (t *tracker) get(k watchKey, name string) (*metav1.PartialObjectMetadata, bool) {
	t.mu.Lock()
	w := t.watches[k]
	t.mu.Unlock()
	if w == nil || w.failed != nil {
		return nil, false
	}
	key := name
	if k.namespace != "" {
		key = k.namespace + "/" + name
	}
	obj, exists, err := w.inf.GetIndexer().GetByKey(key)
	if err != nil || !exists {
		return nil, false
	}
	pom, ok := obj.(*metav1.PartialObjectMetadata)
	return pom, ok
}

// stop stops every informer.
func (t *tracker) stop() {
	t.mu.Lock()
	defer t.mu.Unlock()
	for _, w := range t.watches {
		w.cancel()
	}
	t.watches = map[watchKey]*watch{}
	t.done = true
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
