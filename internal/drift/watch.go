package drift

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/dynamic/dynamicinformer"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"

	"syncd.dev/syncd/internal/planner"
)

// Change is what one recomputation of one object changed: findings that
// appeared and findings that went away (compared by Finding.Key).
type Change struct {
	App    string
	Object planner.ObjectRef
	// New are findings that were not there before; Resolved are
	// findings that are gone, as they were last seen.
	New, Resolved []Finding
	// At is when the change was computed (the Watcher's clock).
	At time.Time
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// OnChange is called with every non-empty Change, from one
	// goroutine at a time, in the order changes are computed. It must
	// not block for long: later events wait for it. Required.
	OnChange func(Change)
	// OnError, when set, is called with watch errors (the informers
	// retry by themselves). It may be called from several goroutines.
	OnError func(error)
	// Debounce is how long after the first event on an object its
	// findings are recomputed; events within that time are folded into
	// one recomputation. Default 200ms.
	Debounce time.Duration
	// Clock schedules the debounce and stamps changes; default the real
	// clock.
	Clock clock.WithDelayedExecution
}

// Watcher recomputes an app's findings from watch events on the objects
// of its plan and reports changes through OnChange. It watches with one
// informer (one list, then one watch) per resource and namespace, with a
// metadata.name field selector when the plan holds a single object there.
// It never writes to the cluster.
type Watcher struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	opts   WatcherOptions

	signal chan struct{}

	mu      sync.Mutex
	plan    *planner.Plan
	det     *detector
	objects map[objKey]*watched
	index   map[groupKey]map[string]objKey // store key → object
	groups  map[groupKey]*group
	current map[objKey][]Finding
	armed   map[objKey]bool
	dirty   map[objKey]bool
	regroup bool
}

// watched is one plan object and what the watcher keeps about it.
type watched struct {
	obj    *planner.Object
	leaves []declared
	group  groupKey
	store  string // the informer store key: "ns/name" or "name"
}

// groupKey is one informer: a resource, a namespace and a field selector.
type groupKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	selector  string
}

type group struct {
	key      groupKey
	informer cache.SharedIndexInformer
	cancel   context.CancelFunc
	synced   bool
}

// NewWatcher returns a Watcher that reads with client and maps kinds with
// mapper. Call SetPlan, then Run.
func NewWatcher(client dynamic.Interface, mapper meta.RESTMapper, opts WatcherOptions) (*Watcher, error) {
	if client == nil {
		return nil, errors.New("drift watcher: client is nil")
	}
	if mapper == nil {
		return nil, errors.New("drift watcher: mapper is nil")
	}
	if opts.OnChange == nil {
		return nil, errors.New("drift watcher: OnChange is nil: give the watcher a function that publishes changes")
	}
	if opts.Debounce < 0 {
		return nil, errors.New("drift watcher: Debounce is negative")
	}
	if opts.Debounce == 0 {
		opts.Debounce = 200 * time.Millisecond
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Watcher{
		client: client, mapper: mapper, opts: opts,
		signal:  make(chan struct{}, 1),
		objects: map[objKey]*watched{},
		groups:  map[groupKey]*group{},
		current: map[objKey][]Finding{},
		armed:   map[objKey]bool{},
		dirty:   map[objKey]bool{},
	}, nil
}

// SetPlan makes the watcher watch plan's objects and detect with opts from
// now on (a new revision, a new config, new yielded fields). Every object
// is recomputed; findings of objects that left the plan are resolved. An
// object of the plan that does not exist yet is reported Deleted, so call
// it after the plan was applied. An
// error names the kind that could not be mapped to a resource, and leaves
// the previous plan in place.
func (w *Watcher) SetPlan(plan *planner.Plan, opts Options) error {
	objects := map[objKey]*watched{}
	names := map[groupKey][]string{}
	for i := range plan.Objects {
		o := &plan.Objects[i]
		gvk := o.Ref.GVK()
		m, err := w.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err != nil {
			return fmt.Errorf("%s: map kind to a resource: %w", o.Ref, err)
		}
		g := groupKey{gvr: m.Resource}
		store := o.Ref.Name
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			g.namespace = o.Ref.Namespace
			store = o.Ref.Namespace + "/" + o.Ref.Name
		}
		names[g] = append(names[g], o.Ref.Name)
		objects[keyOf(o.Ref)] = &watched{obj: o, leaves: declaredLeaves(o), group: g, store: store}
	}
	index := map[groupKey]map[string]objKey{}
	for k, wo := range objects {
		if n := names[wo.group]; len(n) == 1 {
			wo.group.selector = fields.OneTermEqualSelector("metadata.name", n[0]).String()
		}
		if index[wo.group] == nil {
			index[wo.group] = map[string]objKey{}
		}
		index[wo.group][wo.store] = k
	}
	w.mu.Lock()
	for k := range w.objects {
		if _, ok := objects[k]; !ok {
			w.dirty[k] = true // resolves its findings
		}
	}
	for k := range objects {
		w.dirty[k] = true
	}
	w.plan, w.det, w.objects, w.index, w.regroup = plan, newDetector(plan, opts), objects, index, true
	w.mu.Unlock()
	w.poke()
	return nil
}

// Report returns the current findings of every watched object.
func (w *Watcher) Report() *Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &Report{}
	for _, fs := range w.current {
		r.Findings = append(r.Findings, fs...)
	}
	r.sort()
	return r
}

func (w *Watcher) poke() {
	select {
	case w.signal <- struct{}{}:
	default:
	}
}

// Run watches until ctx is done and returns nil then.
func (w *Watcher) Run(ctx context.Context) error {
	defer func() {
		w.mu.Lock()
		for _, g := range w.groups {
			g.cancel()
		}
		w.groups = map[groupKey]*group{}
		w.mu.Unlock()
	}()
	for {
		w.mu.Lock()
		if w.regroup {
			w.regroup = false
			w.syncGroups(ctx)
		}
		w.mu.Unlock()
		w.process()
		select {
		case <-ctx.Done():
			return nil
		case <-w.signal:
		}
	}
}

// syncGroups starts the informers the plan needs and stops the others.
// w.mu is held.
func (w *Watcher) syncGroups(ctx context.Context) {
	want := map[groupKey]bool{}
	for _, o := range w.objects {
		want[o.group] = true
	}
	for k, g := range w.groups {
		if !want[k] {
			g.cancel()
			delete(w.groups, k)
		}
	}
	keys := make([]groupKey, 0, len(want))
	for k := range want {
		if w.groups[k] == nil {
			keys = append(keys, k)
		}
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	for _, k := range keys {
		w.startGroup(ctx, k)
	}
}

func (w *Watcher) startGroup(ctx context.Context, k groupKey) {
	sel := k.selector
	inf := dynamicinformer.NewFilteredDynamicInformer(w.client, k.gvr, k.namespace, 0, cache.Indexers{}, func(o *metav1.ListOptions) {
		o.FieldSelector = sel
	}).Informer()
	gctx, cancel := context.WithCancel(ctx)
	g := &group{key: k, informer: inf, cancel: cancel}
	w.groups[k] = g
	if w.opts.OnError != nil {
		_ = inf.SetWatchErrorHandlerWithContext(func(_ context.Context, _ *cache.Reflector, err error) {
			w.opts.OnError(fmt.Errorf("watch %s in namespace %q: %w", k.gvr, k.namespace, err))
		})
	}
	handler := func(obj any) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		u, ok := obj.(*unstructured.Unstructured)
		if !ok {
			return
		}
		w.event(g, u)
	}
	_, _ = inf.AddEventHandler(cache.ResourceEventHandlerFuncs{
		AddFunc:    handler,
		UpdateFunc: func(_, n any) { handler(n) },
		DeleteFunc: handler,
	})
	go inf.RunWithContext(gctx)
	go func() {
		if !cache.WaitForCacheSync(gctx.Done(), inf.HasSynced) {
			return
		}
		w.mu.Lock()
		g.synced = true
		for ok, o := range w.objects {
			if o.group == k {
				w.dirty[ok] = true
			}
		}
		w.mu.Unlock()
		w.poke()
	}()
}

// event handles one watch event: it records the owners of the object's
// declared fields with the flap detector (every event, so no flip is
// folded away) and arms the object's debounce timer.
func (w *Watcher) event(g *group, u *unstructured.Unstructured) {
	store := u.GetName()
	if g.key.namespace != "" {
		store = u.GetNamespace() + "/" + store
	}
	w.mu.Lock()
	k, ok := w.index[g.key][store]
	wo := w.objects[k]
	if !ok || wo == nil {
		w.mu.Unlock()
		return
	}
	flaps := w.det.opts.Flaps
	now := w.opts.Clock.Now()
	if flaps != nil && u.GetDeletionTimestamp() == nil {
		entries, _ := decodeManagedFields(u)
		for _, l := range wo.leaves {
			os := owners(entries, l.path)
			names := make([]string, len(os))
			for i, o := range os {
				names[i] = o.Manager
			}
			flaps.Observe(wo.obj.Ref, l.str, strings.Join(names, ","), now)
		}
	}
	if w.armed[k] {
		w.mu.Unlock()
		return
	}
	w.armed[k] = true
	w.mu.Unlock()
	w.opts.Clock.AfterFunc(w.opts.Debounce, func() {
		w.mu.Lock()
		delete(w.armed, k)
		w.dirty[k] = true
		w.mu.Unlock()
		w.poke()
	})
}

// process recomputes the dirty objects and publishes the changes.
func (w *Watcher) process() {
	w.mu.Lock()
	keys := make([]objKey, 0, len(w.dirty))
	for k := range w.dirty {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return fmt.Sprint(keys[i]) < fmt.Sprint(keys[j]) })
	var changes []Change
	for _, k := range keys {
		wo := w.objects[k]
		var fs []Finding
		var ref planner.ObjectRef
		if wo != nil {
			g := w.groups[wo.group]
			if g == nil || !g.synced {
				continue // recomputed when the informer has synced
			}
			ref = wo.obj.Ref
			var live *unstructured.Unstructured
			if item, ok, _ := g.informer.GetStore().GetByKey(wo.store); ok {
				live, _ = item.(*unstructured.Unstructured)
			}
			fs, _ = w.det.object(wo.obj, live)
			r := &Report{Findings: fs}
			r.sort()
			fs = r.Findings
		}
		delete(w.dirty, k)
		c := diff(w.current[k], fs)
		if len(fs) == 0 {
			delete(w.current, k)
		} else {
			w.current[k] = fs
		}
		if len(c.New) == 0 && len(c.Resolved) == 0 {
			continue
		}
		if wo == nil && len(c.Resolved) > 0 {
			ref = c.Resolved[0].Ref
		}
		c.App, c.Object, c.At = w.plan.App, ref, w.opts.Clock.Now()
		changes = append(changes, c)
	}
	w.mu.Unlock()
	for _, c := range changes {
		w.opts.OnChange(c)
	}
}

// diff compares two finding lists by Key.
func diff(old, cur []Finding) Change {
	var c Change
	was := map[Key]bool{}
	for _, f := range old {
		was[f.Key()] = true
	}
	is := map[Key]bool{}
	for _, f := range cur {
		is[f.Key()] = true
		if !was[f.Key()] {
			c.New = append(c.New, f)
		}
	}
	for _, f := range old {
		if !is[f.Key()] {
			c.Resolved = append(c.Resolved, f)
		}
	}
	return c
}
