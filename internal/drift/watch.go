package drift

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"sort"
	"strconv"
	"strings"
	"sync"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/tools/cache"
	"k8s.io/utils/clock"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/livecache"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// Delta is what one recomputation of one object changed: findings that
// appeared and findings that went away (compared by Finding.Key).
type Delta struct {
	App string
	// Revision is the Revision of the plan the findings were computed
	// against.
	Revision string
	Object   planner.ObjectRef
	// New are findings that were not there before; Resolved are
	// findings that are gone, as they were last seen.
	New, Resolved []Finding
	// At is when the change was computed (the Watcher's clock).
	At time.Time
}

// WatcherOptions configure a Watcher.
type WatcherOptions struct {
	// OnChange is called with every non-empty Delta, from one
	// goroutine at a time, in the order changes are computed. It must
	// not block for long: later events wait for it. Required.
	OnChange func(Delta)
	// OnError, when set, is called with watch errors (the informers
	// retry by themselves), and with each of the detector's warnings on
	// an object (a managedFields entry it cannot decode) when it first
	// appears; Report keeps the warnings while they hold. It may be
	// called from several goroutines.
	OnError func(error)
	// Debounce is how long after the first event on an object its
	// findings are recomputed; events within that time are folded into
	// one recomputation. Default 200ms.
	Debounce time.Duration
	// Clock schedules the debounce and stamps changes; default the real
	// clock.
	Clock clock.WithDelayedExecution
	// LabelSelector, when set, restricts every list and watch to objects
	// carrying these labels (syncd passes its ApplySet label,
	// "applyset.kubernetes.io/part-of=<id>"), so the watcher lists,
	// decodes and caches only the app's own objects, not every object of
	// the kind in a shared namespace. An object of the plan that is not
	// in the watch is read once with a GET when it is recomputed: when it
	// exists, each requirement of the selector it no longer meets is a
	// finding on that label (".metadata.labels.<key>": taken-over, with
	// the owners of the label if anyone owns it now), besides its field
	// findings, instead of Deleted. While it is out of the watch its
	// later changes are not seen; it is recomputed when it is labelled
	// again or the plan is set again. Empty: no label selector.
	LabelSelector string
	// Normalizer asks the API server how it stores the values of a slice
	// whose declared fields the comparison with Git's text reports as
	// value-drift (see Normalize): once per version of the slice
	// (Slice.Hash) while the watcher runs, so later events on the object
	// cost no request. The object's findings wait for the answer; a
	// failed request is reported to OnError, that slice's values are then
	// compared with Git's text, and it is asked again after the next
	// SetPlan. Default: the applier's forced dry-run apply through the
	// watcher's client.
	Normalizer Normalizer
	// Reader names whom the client reads as (identity.Name of the app:
	// its service account, or "syncd"), for the warning of an object
	// whose list or watch the API server forbids (Unreadable): the
	// watcher never reads it any other way. Default "syncd".
	Reader string
	// Cluster is the name of the cluster the client talks to, the
	// Cluster of the live cache's keys (livecache.Key); default
	// config.LocalCluster, syncd's own.
	Cluster string
	// Cache is the live cache the informers are taken from, shared with
	// the inventory of the same app (inventory.Manager.LiveCache), so its
	// members are listed, watched and kept in memory once; it must be
	// Cluster's. Default: a cache of the watcher's own, stopped when Run
	// returns.
	Cache livecache.Informers
	// User is the user the client acts as (identity.User: "" for
	// syncd's own), part of the live cache's key so that informers of
	// different identities are never shared.
	User string
}

// Watcher recomputes an app's findings from watch events on the objects
// of its plan and reports changes through OnChange. It watches with one
// informer of the live cache (one list, then one watch) per resource and
// namespace, selected by the LabelSelector when one is set, else with a
// metadata.name field selector when the plan holds a single object there.
// It never writes to the cluster.
type Watcher struct {
	client dynamic.Interface
	mapper meta.RESTMapper
	opts   WatcherOptions
	// own is the watcher's own cache when WatcherOptions.Cache is nil.
	own *livecache.Cache
	sel labels.Selector // nil without LabelSelector

	signal chan struct{}

	mu sync.Mutex
	// app, revision and gen are the current plan's app and revision and
	// how many plans were set; the watcher keeps no plan, only what it
	// judges with (watched).
	app, revision string
	gen           uint64
	det           *detector
	objects       map[objKey]*watched
	index         map[groupKey]map[string]objKey // store key → object
	groups        map[groupKey]*group
	current       map[objKey][]Finding
	// warnings are the detector's warnings of each object at its last
	// recomputation (managedFields entries it could not decode).
	warnings map[objKey][]string
	armed    map[objKey]bool
	dirty    map[objKey]bool
	// judged is the resourceVersion of the cached copy each object was
	// last judged on (none: it was not in the cache), so that SetPlan
	// recomputes only what may have changed (rejudge).
	judged map[objKey]string
	// judgements counts the recomputations of plan objects whose
	// findings were published (the tests assert what SetPlan
	// recomputes).
	judgements int
	regroup    bool
	// paused stops recomputation (Pause); expect holds the resourceVersion
	// the caller's own apply left on an object (Applied): an older cached
	// copy is not recomputed.
	paused bool
	expect map[objKey]string
	// retired is set once another watcher took over the findings
	// (Inherit): w publishes nothing more.
	retired bool
	// norm caches the server's answers (Normalizer) per slice version;
	// asking holds the requests in flight.
	norm   map[normKey]normResult
	asking map[normKey]bool
}

// normKey is one version of one manager's slice of one object.
type normKey struct {
	obj           objKey
	manager, hash string
}

// normResult is the Normalizer's answer for one slice version.
type normResult struct {
	obj *unstructured.Unstructured
	err error
}

// watched is one plan object and what the watcher keeps about it: what
// Git declares of it, the apply configurations of its slices, and where
// it is watched. It is never modified once SetPlan made it.
type watched struct {
	decl *declaredObject
	// configs are the apply configurations of decl's slices as JSON, in
	// the same order: what the Normalizer dry-runs. JSON is a fraction of
	// the size of the decoded object, and decoded only for a slice whose
	// values drift.
	configs [][]byte
	group   groupKey
	store   string // the informer store key: "ns/name" or "name"
}

// groupKey is one informer: a resource, a namespace and a field selector.
type groupKey struct {
	gvr       schema.GroupVersionResource
	namespace string
	selector  string
}

// compare orders group keys by resource, namespace and selector.
func (k groupKey) compare(o groupKey) int {
	return cmp.Or(cmp.Compare(k.gvr.Group, o.gvr.Group), cmp.Compare(k.gvr.Version, o.gvr.Version),
		cmp.Compare(k.gvr.Resource, o.gvr.Resource), cmp.Compare(k.namespace, o.namespace), cmp.Compare(k.selector, o.selector))
}

type group struct {
	key      groupKey
	informer *livecache.Informer
	// stop removes the watcher's event and error handlers, ends the
	// wait for the sync and releases the informer.
	stop   func()
	synced bool
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
	if opts.Normalizer == nil {
		ap, err := applier.New(client, mapper, applier.Options{})
		if err != nil {
			return nil, fmt.Errorf("drift watcher: %w", err)
		}
		opts.Normalizer = ap
	}
	if opts.Cluster == "" {
		opts.Cluster = config.LocalCluster
	}
	if opts.Cache != nil && opts.Cache.Cluster() != opts.Cluster {
		return nil, fmt.Errorf("drift watcher: Cache is the live cache of cluster %q, but the watcher watches cluster %q: give it its own cluster's cache", opts.Cache.Cluster(), opts.Cluster)
	}
	var own *livecache.Cache
	if opts.Cache == nil {
		own = livecache.New(opts.Cluster)
		opts.Cache = own
	}
	var sel labels.Selector
	if opts.LabelSelector != "" {
		var err error
		if sel, err = labels.Parse(opts.LabelSelector); err != nil {
			return nil, fmt.Errorf("drift watcher: LabelSelector %q: %w", opts.LabelSelector, err)
		}
	}
	return &Watcher{
		client: client, mapper: mapper, opts: opts, sel: sel, own: own,
		expect:   map[objKey]string{},
		norm:     map[normKey]normResult{},
		asking:   map[normKey]bool{},
		signal:   make(chan struct{}, 1),
		objects:  map[objKey]*watched{},
		groups:   map[groupKey]*group{},
		current:  map[objKey][]Finding{},
		warnings: map[objKey][]string{},
		armed:    map[objKey]bool{},
		dirty:    map[objKey]bool{},
		judged:   map[objKey]string{},
	}, nil
}

// SetPlan makes the watcher watch plan's objects and detect with opts from
// now on (a new revision, a new config, new yielded fields), and ends a
// Pause. The watcher keeps what it judges with (what Git declares of each
// object), not plan. An object is recomputed from the cache unless nothing
// that decides its findings changed since it was last judged (rejudge);
// findings of objects that left the plan (or, inherited, were never in
// it), or that the new plan no longer makes, are resolved. An object of the plan that does not exist yet is
// reported Deleted, so call it after the plan was applied. An error names
// the kind that could not be mapped to a resource, or the slice that could
// not be encoded, and leaves the previous plan in place (and the watcher
// paused, if it was).
func (w *Watcher) SetPlan(plan *planner.Plan, opts Options) error {
	w.mu.Lock()
	prev, prevIndex := w.objects, w.index // replaced, never modified, so they may be read unlocked
	w.mu.Unlock()
	objects, index := prev, prevIndex
	if !w.unchanged(plan, prev) {
		var names map[groupKey][]string
		var err error
		if objects, names, err = w.watchedOf(plan, prev); err != nil {
			return err
		}
		index = indexOf(objects, names, w.sel == nil)
	}
	det := newDetector(plan, opts)
	w.mu.Lock()
	w.markToJudge(objects, det)
	for k := range w.expect {
		if _, ok := objects[k]; !ok {
			delete(w.expect, k)
		}
	}
	w.app, w.revision, w.gen = plan.App, plan.Revision, w.gen+1
	w.det, w.objects, w.index, w.regroup = det, objects, index, true
	w.keepNormalized()
	w.paused = false
	w.mu.Unlock()
	w.poke()
	return nil
}

// watchedOf returns what the watcher keeps of each object of plan, and the
// names of the objects of each informer. An object that declares what it
// declared in prev (the previous plan's) keeps what was kept of it.
func (w *Watcher) watchedOf(plan *planner.Plan, prev map[objKey]*watched) (map[objKey]*watched, map[groupKey][]string, error) {
	objects := make(map[objKey]*watched, len(plan.Objects))
	names := map[groupKey][]string{}
	paths := declaredPaths{}
	mappings := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for i := range plan.Objects {
		o := &plan.Objects[i]
		m, err := mappingOnce(w.mapper, mappings, o.Ref.GVK())
		if err != nil {
			return nil, nil, fmt.Errorf("%s: map kind to a resource: %w", o.Ref, err)
		}
		g := groupKey{gvr: m.Resource}
		store := o.Ref.Name
		if m.Scope.Name() == meta.RESTScopeNameNamespace {
			g.namespace = o.Ref.Namespace
			store = o.Ref.Namespace + "/" + o.Ref.Name
		}
		names[g] = append(names[g], o.Ref.Name)
		k := keyOf(o.Ref)
		wo, err := watchedFrom(o, prev[k], paths)
		if err != nil {
			return nil, nil, err
		}
		wo.group, wo.store = g, store
		objects[k] = wo
	}
	return objects, names, nil
}

// unchanged reports whether plan declares exactly what prev watches: the
// same objects (a plan holds each once: the planner refuses duplicates),
// each declaring the same slices and mapped to the same informer. SetPlan
// then keeps prev and its index instead of building both again beside
// them: about 10 MB at 10,000 objects, live at the daemon's peak (a
// reconcile that changed nothing). A kind that cannot be mapped is not
// unchanged (watchedOf then says why).
func (w *Watcher) unchanged(plan *planner.Plan, prev map[objKey]*watched) bool {
	if len(prev) == 0 || len(plan.Objects) != len(prev) {
		return false
	}
	mappings := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for i := range plan.Objects {
		o := &plan.Objects[i]
		wo := prev[keyOf(o.Ref)]
		if wo == nil || !wo.decl.declares(o) {
			return false
		}
		m, err := mappingOnce(w.mapper, mappings, o.Ref.GVK())
		if err != nil || !sameInformer(wo.group, m, o.Ref) {
			return false
		}
	}
	return true
}

// sameInformer reports whether g is the informer an object ref mapped
// with m is watched in (its selector aside, which indexOf sets).
func sameInformer(g groupKey, m *meta.RESTMapping, ref planner.ObjectRef) bool {
	ns := ""
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		ns = ref.Namespace
	}
	return g.gvr == m.Resource && g.namespace == ns
}

// mappingOnce returns gvk's REST mapping, asking mapper only for a kind
// not in mappings yet: the discovery mapper builds a new mapping on every
// call (about 6 KB and 70 allocations), which per object of a large plan
// was most of SetPlan's garbage.
func mappingOnce(mapper meta.RESTMapper, mappings map[schema.GroupVersionKind]*meta.RESTMapping, gvk schema.GroupVersionKind) (*meta.RESTMapping, error) {
	if m, ok := mappings[gvk]; ok {
		return m, nil
	}
	m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	mappings[gvk] = m
	return m, nil
}

// watchedFrom returns what the watcher keeps of obj: prev's declaration
// and slice configurations (the object in the previous plan) when obj
// declares the same, else made from obj, its declared paths kept in paths.
func watchedFrom(obj *planner.Object, prev *watched, paths declaredPaths) (*watched, error) {
	if prev != nil && prev.decl.declares(obj) {
		return &watched{decl: prev.decl, configs: prev.configs}, nil
	}
	wo := &watched{decl: declareIn(obj, paths), configs: make([][]byte, len(obj.Slices))}
	for i, s := range obj.Slices {
		if s.Object == nil {
			continue
		}
		b, err := json.Marshal(s.Object.Object)
		if err != nil {
			return nil, fmt.Errorf("%s: slice of %s: encode its apply configuration: %w", obj.Ref, s.Manager, err)
		}
		wo.configs[i] = b
	}
	return wo, nil
}

// indexOf indexes objects by informer and store key. With byName (no
// label selector), an informer of a single object watches it by name.
func indexOf(objects map[objKey]*watched, names map[groupKey][]string, byName bool) map[groupKey]map[string]objKey {
	index := map[groupKey]map[string]objKey{}
	for k, wo := range objects {
		if n := names[wo.group]; len(n) == 1 && byName {
			// Label-selected watches are narrow already, and shared
			// with the inventory's, which selects by label only.
			wo.group.selector = fields.OneTermEqualSelector("metadata.name", n[0]).String()
		}
		if index[wo.group] == nil {
			index[wo.group] = map[string]objKey{}
		}
		index[wo.group][wo.store] = k
	}
	return index
}

// markToJudge marks the objects SetPlan recomputes: those that left the
// plan and those with findings that are not in it (inherited: Inherit),
// whose findings are resolved, and of the new plan's objects those
// rejudge names, every one of them when det judges otherwise than the
// previous plan's detector (another app, other managers or rules). w.mu
// is held.
func (w *Watcher) markToJudge(objects map[objKey]*watched, det *detector) {
	for k := range w.objects {
		if _, ok := objects[k]; !ok {
			w.dirty[k] = true
			delete(w.judged, k)
		}
	}
	for k := range w.current {
		if _, ok := objects[k]; !ok {
			w.dirty[k] = true
		}
	}
	same := w.det != nil && w.det.judgesLike(det)
	for k, wo := range objects {
		if !same || w.rejudge(k, wo, det) {
			w.dirty[k] = true
			continue
		}
		// The copy judged is the one syncd's apply left, or newer.
		delete(w.expect, k)
	}
}

// rejudge reports whether SetPlan recomputes the object k of the new plan
// (wo), judged by det, which judges like the previous plan's detector. It
// does unless its findings cannot have changed: it declares what it
// declared, in the same informer, det lists the same fields of it as
// yielded or held, it had no findings and no warnings (a flap detector's
// verdict or a failed Normalizer answer may have changed since), and the
// synced informer holds the very copy (resourceVersion) it was last
// judged on, not older than the version syncd's apply left (Applied; an
// unchanged object's is the cached one). w.mu is held.
func (w *Watcher) rejudge(k objKey, wo *watched, det *detector) bool {
	prev := w.objects[k]
	if prev == nil || prev.decl != wo.decl || prev.group != wo.group || !w.det.listsLike(det, k) {
		return true
	}
	if w.dirty[k] || len(w.current[k]) > 0 || len(w.warnings[k]) > 0 {
		return true
	}
	rv, ok := w.judged[k]
	g := w.groups[wo.group]
	if !ok || g == nil || !g.synced {
		return true
	}
	if exp, ok := w.expect[k]; ok && older(rv, exp) {
		return true
	}
	o, ok := g.informer.Get(wo.group.namespace, wo.decl.ref.Name)
	return !ok || o.GetResourceVersion() != rv
}

// Inherit makes the findings prev holds w's own, as if w had published
// them: a watcher that replaces another for the same app (on another
// cluster, as another identity, or made by a driver that built the app
// anew for a new config) then publishes the change from what was
// published, not from nothing. A finding that is still there is not New
// again, and one that is gone is Resolved: the first SetPlan recomputes
// every object, and resolves the findings of objects that are not in its
// plan. Until then Report shows the inherited findings. prev publishes
// nothing from then on, whatever SetPlan or Resume it is given (a change
// it computed before is still delivered, and is part of what w
// inherits); stop its Run. Call Inherit before w's first SetPlan. A nil
// prev is a no-op.
func (w *Watcher) Inherit(prev *Watcher) {
	if prev == nil || prev == w {
		return
	}
	prev.mu.Lock()
	prev.retired = true
	found := make(map[objKey][]Finding, len(prev.current))
	for k, fs := range prev.current {
		found[k] = fs // replaced, never modified (keepFindings)
	}
	prev.mu.Unlock()
	w.mu.Lock()
	defer w.mu.Unlock()
	for k, fs := range found {
		if _, ok := w.current[k]; !ok {
			w.current[k] = fs
		}
	}
}

// Pause stops recomputing findings until SetPlan or Resume: events are
// still cached (and seen by the flap detector) and the objects they touch
// are recomputed when the pause ends. Pause the watcher while applying a
// new plan, so that the apply's own writes are never judged against the
// previous plan, then call Applied and SetPlan. (Not to be confused with
// the applier's handoff hold, which is about field ownership.)
func (w *Watcher) Pause() {
	w.mu.Lock()
	w.paused = true
	w.mu.Unlock()
}

// Resume ends a Pause without a new plan (the apply did not happen) and
// recomputes what changed meanwhile.
func (w *Watcher) Resume() {
	w.mu.Lock()
	w.paused = false
	w.mu.Unlock()
	w.poke()
}

// Applied records the resourceVersions the caller's own apply left on
// objects (empty versions are ignored). Until the watch has delivered that
// version (or a later one, or the object's deletion), an object's older
// cached copy is not recomputed, so a write syncd has just made is never
// reported as drift because the watch lags. Call it before SetPlan.
// Versions are compared as numbers (etcd's); one that is not a number
// counts as delivered.
func (w *Watcher) Applied(versions map[planner.ObjectRef]string) {
	w.mu.Lock()
	defer w.mu.Unlock()
	for r, v := range versions {
		if _, err := parseRV(v); err == nil {
			w.expect[keyOf(r)] = v
		}
	}
}

// parseRV parses a resourceVersion as etcd writes it.
func parseRV(v string) (uint64, error) { return strconv.ParseUint(v, 10, 64) }

// older reports whether resourceVersion have is older than want; versions
// that are not numbers are never older.
func older(have, want string) bool {
	h, err1 := parseRV(have)
	wv, err2 := parseRV(want)
	return err1 == nil && err2 == nil && h < wv
}

// Report returns the current findings of every watched object, the
// detector's warnings on them (as Detect's), and a warning for each object
// whose list or watch the API server forbids the reader
// (WatcherOptions.Reader), with no value of it.
func (w *Watcher) Report() *Report {
	w.mu.Lock()
	defer w.mu.Unlock()
	r := &Report{}
	for _, fs := range w.current {
		r.Findings = append(r.Findings, fs...)
	}
	for _, ws := range w.warnings {
		r.Warnings = append(r.Warnings, ws...)
	}
	unreadable := Unreadable{By: w.opts.Reader}
	for _, o := range w.objects {
		if g := w.groups[o.group]; g != nil && g.informer.Forbidden() && !g.synced {
			unreadable.Objects = append(unreadable.Objects, o.decl.ref)
		}
	}
	for _, ref := range unreadable.Objects {
		r.Warnings = append(r.Warnings, unreadable.warning(ref))
	}
	sort.Strings(r.Warnings)
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
			g.stop()
		}
		w.groups = map[groupKey]*group{}
		w.mu.Unlock()
		if w.own != nil {
			w.own.Stop()
		}
	}()
	for {
		w.mu.Lock()
		if w.regroup {
			w.regroup = false
			w.syncGroups(ctx)
		}
		w.mu.Unlock()
		w.process(ctx)
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
			g.stop()
			delete(w.groups, k)
		}
	}
	keys := make([]groupKey, 0, len(want))
	for k := range want {
		if w.groups[k] == nil {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, groupKey.compare)
	for _, k := range keys {
		w.startGroup(ctx, k)
	}
}

// startGroup acquires the live cache's informer of k and adds the
// watcher's handlers to it. An informer that cannot be had is reported to
// OnError; its objects wait, unsynced, for the next SetPlan. w.mu is held.
func (w *Watcher) startGroup(ctx context.Context, k groupKey) {
	inf, err := w.opts.Cache.Acquire(livecache.Key{
		Cluster:  w.opts.Cluster,
		Resource: k.gvr, Namespace: k.namespace,
		LabelSelector: w.opts.LabelSelector, FieldSelector: k.selector,
		User: w.opts.User,
	}, w.client)
	if err != nil {
		if w.opts.OnError != nil {
			w.opts.OnError(fmt.Errorf("watch %s in namespace %q: %w", k.gvr, k.namespace, err))
		}
		return
	}
	gctx, cancel := context.WithCancel(ctx)
	g := &group{key: k, informer: inf}
	w.groups[k] = g
	removeErr := inf.OnWatchError(func(err error) {
		if w.opts.OnError != nil {
			w.opts.OnError(fmt.Errorf("watch %s in namespace %q: %w", k.gvr, k.namespace, err))
		}
	})
	reg, err := inf.AddEventHandler(w.handler(g))
	g.stop = func() {
		cancel()
		removeErr()
		if reg != nil {
			_ = inf.RemoveEventHandler(reg)
		}
		w.opts.Cache.Release(inf)
	}
	if err != nil {
		if w.opts.OnError != nil {
			w.opts.OnError(fmt.Errorf("watch %s in namespace %q: %w", k.gvr, k.namespace, err))
		}
		return
	}
	go w.awaitSync(gctx, g, reg)
}

// handler passes the informer's events on objects to event.
func (w *Watcher) handler(g *group) cache.ResourceEventHandler {
	handle := func(obj any, deleted bool) {
		if d, ok := obj.(cache.DeletedFinalStateUnknown); ok {
			obj = d.Obj
		}
		o, ok := obj.(*livecache.Object)
		if !ok {
			return
		}
		w.event(g, o, deleted)
	}
	return cache.ResourceEventHandlerFuncs{
		AddFunc:    func(o any) { handle(o, false) },
		UpdateFunc: func(_, n any) { handle(n, false) },
		DeleteFunc: func(o any) { handle(o, true) },
	}
}

// awaitSync marks g synced once the informer has listed and the watcher's
// handler has seen every object it holds, and recomputes g's objects.
func (w *Watcher) awaitSync(ctx context.Context, g *group, reg cache.ResourceEventHandlerRegistration) {
	if !cache.WaitForCacheSync(ctx.Done(), g.informer.HasSynced, reg.HasSynced) {
		return
	}
	w.mu.Lock()
	g.synced = true
	for ok, o := range w.objects {
		if o.group == g.key {
			w.dirty[ok] = true
		}
	}
	w.mu.Unlock()
	w.poke()
}

// event handles one watch event: it records the owners of the object's
// declared fields with the flap detector (every event, so no flip is
// folded away) and arms the object's debounce timer. A deletion (or the
// object leaving a label-selected watch) ends the wait for an applied
// version.
func (w *Watcher) event(g *group, u *livecache.Object, deleted bool) {
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
	if exp, ok := w.expect[k]; deleted && ok && !older(u.GetResourceVersion(), exp) {
		delete(w.expect, k)
	}
	flaps := w.det.opts.Flaps
	now := w.opts.Clock.Now()
	if flaps != nil && u.GetDeletionTimestamp() == nil {
		own := ownership.DecodeEntries(u.GetManagedFields()) // its warnings are reported by recompute
		for _, l := range wo.decl.leaves {
			os := l.owners(own)
			names := make([]string, len(os))
			for i, o := range os {
				names[i] = o.Manager
			}
			flaps.Observe(wo.decl.ref, l.str, strings.Join(names, ","), now)
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
		w.armed = emptied(w.armed)
		w.dirty[k] = true
		w.mu.Unlock()
		w.poke()
	})
}

// process recomputes the dirty objects and publishes the changes. It does
// nothing while the watcher is paused. Objects of the plan missing from the
// cache are read with a GET first (outside the lock) when a label selector
// is set or syncd applied them: the object may exist outside the watch, or
// the watch may lag behind the apply.
func (w *Watcher) process(ctx context.Context) {
	reads, gen, ok := w.missingReads()
	if !ok {
		return
	}
	fetched := w.readMissing(ctx, reads)
	w.mu.Lock()
	if w.paused || w.retired || w.gen != gen {
		// A new plan or a pause came in meanwhile (it poked the loop),
		// or another watcher took over.
		w.mu.Unlock()
		return
	}
	changes, asks, warns := w.recompute(fetched)
	w.mu.Unlock()
	for _, c := range changes {
		w.opts.OnChange(c)
	}
	if w.opts.OnError != nil {
		for _, warn := range warns {
			w.opts.OnError(errors.New(warn))
		}
	}
	w.normalize(ctx, asks)
}

// missingRead is a GET of a plan object missing from the cache.
type missingRead struct {
	k  objKey
	ri dynamic.ResourceInterface
}

// missingReads returns the reads of the dirty objects a synced informer
// does not hold but that may exist (a label selector is set, or syncd
// applied them), and the plan they belong to (by SetPlan count); ok is
// false while the watcher is paused or retired (Inherit).
func (w *Watcher) missingReads() (reads []missingRead, gen uint64, ok bool) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.paused || w.retired {
		return nil, 0, false
	}
	for k := range w.dirty {
		wo := w.objects[k]
		if wo == nil {
			continue
		}
		_, exp := w.expect[k]
		if w.sel == nil && !exp {
			continue
		}
		g := w.groups[wo.group]
		if g == nil || !g.synced {
			continue
		}
		if _, ok := g.informer.Get(wo.group.namespace, wo.decl.ref.Name); ok {
			continue
		}
		var ri dynamic.ResourceInterface = w.client.Resource(wo.group.gvr)
		if wo.group.namespace != "" {
			ri = w.client.Resource(wo.group.gvr).Namespace(wo.group.namespace)
		}
		reads = append(reads, missingRead{k: k, ri: ri})
	}
	return reads, w.gen, true
}

// readMissing does the reads, without the lock, and returns what they
// found: nil for an object that does not exist. A failed read is reported
// to OnError and left out.
func (w *Watcher) readMissing(ctx context.Context, reads []missingRead) map[objKey]*unstructured.Unstructured {
	fetched := map[objKey]*unstructured.Unstructured{}
	for _, r := range reads {
		wo := w.objectOf(r.k)
		if wo == nil {
			continue
		}
		got, err := r.ri.Get(ctx, wo.decl.ref.Name, metav1.GetOptions{})
		switch {
		case apierrors.IsNotFound(err):
			fetched[r.k] = nil
		case err != nil:
			if w.opts.OnError != nil && ctx.Err() == nil {
				w.opts.OnError(fmt.Errorf("%s: read an object missing from the watch: %w", wo.decl.ref, err))
			}
		default:
			fetched[r.k] = got
		}
	}
	return fetched
}

// recompute recomputes the dirty objects in key order and records their
// findings and warnings. It returns the changes to publish, the slices to
// ask the Normalizer about, and the warnings that were not there at the
// object's previous recomputation. w.mu is held.
func (w *Watcher) recompute(fetched map[objKey]*unstructured.Unstructured) (changes []Delta, asks []normKey, newWarns []string) {
	keys := make([]objKey, 0, len(w.dirty))
	for k := range w.dirty {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, objKey.compare)
	for _, k := range keys {
		wo := w.objects[k]
		var fs []Finding
		var warns []string
		var ref planner.ObjectRef
		if wo != nil {
			ref = wo.decl.ref
			var ask []normKey
			var ready bool
			fs, warns, ask, ready = w.findingsOf(k, wo, fetched)
			asks = append(asks, ask...)
			if !ready {
				continue
			}
		}
		delete(w.dirty, k)
		if wo != nil {
			w.judgements++
		}
		newWarns = append(newWarns, w.keepWarnings(k, warns)...)
		if c, ok := w.keepFindings(k, fs); ok {
			if wo == nil && len(c.Resolved) > 0 {
				ref = c.Resolved[0].Ref
			}
			c.App, c.Revision, c.Object, c.At = w.app, w.revision, ref, w.opts.Clock.Now()
			changes = append(changes, c)
		}
	}
	if len(keys) > 0 {
		w.dirty, w.expect = emptied(w.dirty), emptied(w.expect)
	}
	return changes, asks, newWarns
}

// emptied returns m, or a new map when m is empty. A Go map keeps the
// room of its largest size: the watcher's maps of objects to judge, to
// wait for and to debounce fill with every object of the plan after a
// sync and empty once they are judged, and would otherwise hold that
// room (3 MB at 10,000 objects for the objects to judge alone) for as
// long as the watcher runs.
func emptied[K comparable, V any](m map[K]V) map[K]V {
	if len(m) > 0 {
		return m
	}
	return map[K]V{}
}

// findingsOf returns the findings and warnings of the plan object k,
// sorted; ready is false when they cannot be published yet (the informer
// has not synced, the copy to judge is not there yet, or the Normalizer
// is asked first: asks) and the object stays dirty. w.mu is held.
func (w *Watcher) findingsOf(k objKey, wo *watched, fetched map[objKey]*unstructured.Unstructured) (fs []Finding, warns []string, asks []normKey, ready bool) {
	g := w.groups[wo.group]
	if g == nil || !g.synced {
		return nil, nil, nil, false // recomputed when the informer has synced
	}
	live, outside, ok := w.copyToJudge(k, wo, g, fetched)
	if !ok {
		return nil, nil, nil, false
	}
	if outside != nil {
		read := liveOf(outside)
		fs, warns = w.det.object(wo.decl, read)
		if !exempt(wo.decl.git, read) {
			fs = append(fs, w.det.labelFindings(wo.decl, outside, w.sel)...)
		}
	} else {
		fs, warns = w.det.object(wo.decl, live)
		if live != nil && live.err != nil {
			// The cached copy could not be decoded or built: the
			// object is judged again on its next event.
			if w.opts.OnError != nil {
				w.opts.OnError(fmt.Errorf("%s: %w", wo.decl.ref, live.err))
			}
			return nil, nil, nil, false
		}
	}
	if ask, wait := w.toNormalize(k, wo, fs); wait {
		// Published once the server said how it stores the values; the
		// object stays dirty until then.
		return nil, nil, ask, false
	}
	r := &Report{Findings: fs}
	r.sort()
	return r.Findings, warns, nil, true
}

// copyToJudge decides which copy of the plan object k its findings are
// computed from: live, the informer's (nil: deleted), or outside, read
// with a GET because it is out of a label-selected watch. ok is false
// when neither may be judged yet: the read failed, the object's event is
// on the way, or the cached copy is older than syncd's own apply. It ends
// the wait for an applied version once it is delivered, and records the
// version of the cached copy looked at (judged). w.mu is held.
func (w *Watcher) copyToJudge(k objKey, wo *watched, g *group, fetched map[objKey]*unstructured.Unstructured) (live *liveCopy, outside *unstructured.Unstructured, ok bool) {
	delete(w.judged, k)
	if o, ok := g.informer.Get(wo.group.namespace, wo.decl.ref.Name); ok {
		live = cachedCopy(o)
		// An object that is not published now stays dirty, and is
		// judged again whatever this says (rejudge).
		w.judged[k] = o.GetResourceVersion()
	}
	exp, expecting := w.expect[k]
	if live == nil && (w.sel != nil || expecting) {
		got, read := fetched[k]
		if !read {
			return nil, nil, false // not read (an error, or it left the cache meanwhile); retried on the next event
		}
		switch {
		case got == nil:
			delete(w.expect, k) // deleted since the apply
		case w.sel == nil || w.sel.Matches(labels.Set(got.GetLabels())):
			return nil, nil, false // in the watch: its event is on the way
		default:
			delete(w.expect, k)
			outside = got
		}
	}
	if live != nil && expecting {
		if older(live.cached.GetResourceVersion(), exp) {
			return nil, nil, false // the watch has not delivered syncd's own write yet; its event will
		}
		delete(w.expect, k)
	}
	return live, outside, true
}

// keepFindings records fs as the current findings of k and returns the
// change from the previous ones; ok is false when nothing changed. w.mu
// is held.
func (w *Watcher) keepFindings(k objKey, fs []Finding) (Delta, bool) {
	c := diff(w.current[k], fs)
	if len(fs) == 0 {
		delete(w.current, k)
	} else {
		w.current[k] = fs
	}
	return c, len(c.New) > 0 || len(c.Resolved) > 0
}

// keepWarnings records warns as the current warnings of k (Report) and
// returns those that were not among the previous ones. w.mu is held.
func (w *Watcher) keepWarnings(k objKey, warns []string) []string {
	was := map[string]bool{}
	for _, s := range w.warnings[k] {
		was[s] = true
	}
	var added []string
	for _, s := range warns {
		if !was[s] {
			added = append(added, s)
		}
	}
	if len(warns) == 0 {
		delete(w.warnings, k)
	} else {
		w.warnings[k] = warns
	}
	return added
}

// objectOf returns the watched object of k, nil when it left the plan.
func (w *Watcher) objectOf(k objKey) *watched {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.objects[k]
}

// labelFindings returns a finding for every requirement of sel that live's
// labels do not meet, on the label's path: taken-over when no syncd
// manager owns the label any more (someone removed or relabelled it),
// none when another syncd app owns the part-of label (the object is in
// both apps' inventories, and the label stays the first app's).
func (d *detector) labelFindings(obj *declaredObject, live *unstructured.Unstructured, sel labels.Selector) []Finding {
	if sel == nil {
		return nil
	}
	reqs, _ := sel.Requirements()
	own := ownership.Decode(live) // its warnings are the object check's
	set := labels.Set(live.GetLabels())
	var out []Finding
	for _, r := range reqs {
		if r.Matches(set) {
			continue
		}
		path := fieldpath.MakePathOrDie("metadata", "labels", r.Key())
		f := d.baseFinding(obj)
		f.Path, f.Differs = path.String(), true
		f.Desired = r.String()
		if vs := r.Values(); vs.Len() == 1 && (r.Operator() == "=" || r.Operator() == "==" || r.Operator() == "in") {
			f.Desired = vs.List()[0]
		}
		if v, ok := set[r.Key()]; ok {
			f.Live = v
		}
		f.Owners = owners(own, path)
		if path.String() == partOfLabel && d.otherAppsOwn(live.GetAnnotations(), f.Owners) {
			// A member of another app's inventory too: the label is
			// that app's (otherInventoryLabel).
			continue
		}
		f.Culprit = d.culprit(f.Owners)
		f.Class = TakenOver
		for _, o := range f.Owners {
			if d.isSyncd(o.Manager) {
				f.Class = ValueDrift
			}
		}
		d.redact(&f, path)
		out = append(out, f)
	}
	return out
}

// diff compares two finding lists by Key.
func diff(old, cur []Finding) Delta {
	var c Delta
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
