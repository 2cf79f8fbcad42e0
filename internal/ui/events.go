package ui

import (
	"context"
	"fmt"
	"net/http"
	"net/url"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
)

// Event stream timings.
const (
	// eventDebounce folds the watch events of a burst (an apply writes an
	// object and then its status) into one "changed" event.
	eventDebounce = 250 * time.Millisecond
	// keepAlive is how often an idle stream sends a comment, so proxies
	// and browsers do not close it.
	keepAlive = 15 * time.Second
)

// watchTarget is one resource a page's live updates watch.
type watchTarget struct {
	resource  schema.GroupVersionResource
	namespace string
	list      metav1.ListOptions
}

// watchTargets are what the page at page (its path and query) shows: the
// Apps and the inventories for the Apps and App pages, the object itself
// for the Object page.
func (s *Server) watchTargets(page *url.URL) ([]watchTarget, error) {
	switch page.Path {
	case "/", "/app", "/drift":
		return []watchTarget{
			{resource: v1alpha1.AppResource},
			{resource: secretsResource, namespace: s.opts.InventoryNamespace, list: metav1.ListOptions{FieldSelector: "type=" + inventory.SecretType}},
		}, nil
	case "/object":
		ref := objectRefOf(page.Query())
		gvk := schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
		mapping, err := s.opts.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", ref, err)
		}
		return []watchTarget{{resource: mapping.Resource, namespace: ref.Namespace,
			list: metav1.ListOptions{FieldSelector: fields.OneTermEqualSelector("metadata.name", ref.Name).String()}}}, nil
	}
	return nil, fmt.Errorf("page %q has no live updates: %w", page.Path, errNotFound)
}

// serveEvents streams server-sent events for the page named by the
// query parameter page: a "changed" event whenever what it shows changed
// in the cluster (debounced). The page's script then fetches itself again.
// A watch the user's RBAC refuses ends the stream with an "error" event.
func (s *Server) serveEvents(w http.ResponseWriter, r *http.Request) {
	page, err := url.Parse(r.URL.Query().Get("page"))
	if err != nil {
		http.Error(w, "syncd ui: page: "+err.Error(), http.StatusBadRequest)
		return
	}
	targets, err := s.watchTargets(page)
	if err != nil {
		s.fail(w, err)
		return
	}
	flusher, ok := w.(http.Flusher)
	if !ok {
		http.Error(w, "syncd ui: streaming unsupported", http.StatusInternalServerError)
		return
	}
	ctx, cancel := context.WithCancel(r.Context())
	defer cancel()
	changes := make(chan struct{}, 1)
	for _, t := range targets {
		wi, err := s.watch(ctx, t)
		if err != nil {
			s.fail(w, err)
			return
		}
		defer wi.Stop()
		go forward(ctx, wi, changes)
	}
	w.Header().Set("Content-Type", "text/event-stream")
	w.WriteHeader(http.StatusOK)
	fmt.Fprint(w, "retry: 2000\n\n")
	flusher.Flush()
	s.stream(ctx, w, flusher, changes)
}

// watch starts one watch from now (no initial events: the page already
// shows the current state).
func (s *Server) watch(ctx context.Context, t watchTarget) (watch.Interface, error) {
	ri := s.opts.Dynamic.Resource(t.resource)
	list := t.list
	list.Limit = 1
	var cur, err = ri.Namespace(t.namespace).List(ctx, list)
	if t.namespace == "" {
		cur, err = ri.List(ctx, list)
	}
	if err != nil {
		return nil, fmt.Errorf("watch %s: %w", t.resource.Resource, err)
	}
	opts := t.list
	opts.ResourceVersion = cur.GetResourceVersion()
	if t.namespace == "" {
		return ri.Watch(ctx, opts)
	}
	return ri.Namespace(t.namespace).Watch(ctx, opts)
}

// forward signals changes for every event of a watch until it ends.
func forward(ctx context.Context, wi watch.Interface, changes chan<- struct{}) {
	for {
		select {
		case <-ctx.Done():
			return
		case _, ok := <-wi.ResultChan():
			if !ok {
				return
			}
			select {
			case changes <- struct{}{}:
			default:
			}
		}
	}
}

// stream writes a "changed" event for each burst of changes and a
// keep-alive comment when idle, until the client goes away.
func (s *Server) stream(ctx context.Context, w http.ResponseWriter, flusher http.Flusher, changes <-chan struct{}) {
	ping := time.NewTicker(keepAlive)
	defer ping.Stop()
	for {
		select {
		case <-ctx.Done():
			return
		case <-ping.C:
			fmt.Fprint(w, ": keep-alive\n\n")
		case <-changes:
			select {
			case <-ctx.Done():
				return
			case <-time.After(eventDebounce):
			}
			fmt.Fprint(w, "event: changed\ndata: {}\n\n")
		}
		flusher.Flush()
	}
}
