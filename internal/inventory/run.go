package inventory

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/identity"
	"syncd.dev/syncd/internal/planner"
)

// listThreshold is how many unknown objects of one resource and namespace
// make one paginated LIST cheaper than a GET each.
const listThreshold = 16

// listPage is the page size of those LISTs.
const listPage = 500

// Run is one reconcile of one app: Begin, then the applier with Hooks,
// then Finish.
type Run struct {
	m      *Manager
	app    App
	plan   *planner.Plan
	dryRun bool
	id     string
	// md reads, deletes and patches the app's members, as the
	// app's identity (Manager.members).
	md metadata.Interface
	// watcher lists and watches them into the live cache, as the app's
	// identity too.
	watcher dynamic.Interface

	prev    *loaded
	prevIdx map[Key]*Member
	// adopted holds the plan objects new to the inventory that existed
	// before this run without the app's part-of label.
	adopted map[Key]bool
	// revision is the commit SHA this run applies (SetRevision); rewound,
	// when set, refuses the prune as ReasonRewound (Rewound).
	revision, rewound string
	// contended is set when another writer changed the inventory while
	// Begin wrote it: the prune is refused (ReasonInventoryChanged).
	contended bool

	mu sync.Mutex
	// known holds what Begin read for objects the watch cache does not
	// hold (seen; nil: absent): for an object as syncd left it only its
	// resourceVersion, for another its typed metadata, turned into an
	// object only when the applier reads it. An unstructured copy of
	// every member's metadata, managedFields as nested maps, was most of
	// a one-shot no-op's heap; the typed metadata of every member, and
	// the LIST pages they pinned, were most of what was left. Finish
	// drops it (forgetReads).
	known map[Key]*seen
	// mappings caches the REST mappings of the run's kinds.
	mappings map[schema.GroupVersionKind]*meta.RESTMapping
}

// Begin starts a reconcile of app: it reads the inventory, makes sure the
// app's members are watched, reads the objects the watch does not hold
// (new ones, with one LIST per resource and namespace when there are
// many), and — unless dryRun — records every object the plan may create
// in the inventory before anything is applied, so that an interrupted run
// never leaves an object syncd created outside the inventory.
func (m *Manager) Begin(ctx context.Context, app App, plan *planner.Plan, dryRun bool) (*Run, error) {
	return m.BeginAhead(ctx, nil, app, plan, dryRun)
}

// BeginAhead is Begin using what ahead (ReadAhead of app; nil: none) has
// read: its inventory, and the members its LISTs found.
func (m *Manager) BeginAhead(ctx context.Context, ahead *Ahead, app App, plan *planner.Plan, dryRun bool) (*Run, error) {
	clients, err := m.clientsOf(app)
	if err != nil {
		return nil, err
	}
	prev, lists, fromAhead := ahead.result(app)
	if !fromAhead {
		if prev, err = m.store.loadFor(ctx, app); err != nil {
			return nil, err
		}
	}
	r := &Run{
		m: m, app: app, plan: plan, dryRun: dryRun, id: prev.inv.ID, md: clients.md, watcher: clients.dyn,
		prev: prev, prevIdx: prev.inv.Index(),
		adopted: map[Key]bool{}, known: map[Key]*seen{},
	}
	if err := r.prefetch(ctx, lists); err != nil {
		return nil, err
	}
	if dryRun {
		return r, nil
	}
	// The superset: every previous member plus every plan object, so a
	// crash between apply and Finish cannot lose track of a new object.
	// Written only if the parent is still the one read; else read again
	// and decide again.
	for attempt := 1; ; attempt++ {
		_, err := m.store.save(ctx, r.prev, r.superset())
		if !errors.Is(err, errChanged) || attempt == saveAttempts {
			if err != nil {
				return nil, err
			}
			return r, nil
		}
		r.contended = true
		if err := r.reread(ctx); err != nil {
			return nil, err
		}
	}
}

// superset is every member the run read plus every plan object.
func (r *Run) superset() *Inventory {
	super := &Inventory{App: r.app.Name, ID: r.id, Revision: r.prev.inv.Revision, Owner: r.owner()}
	for _, mem := range r.prev.inv.Members {
		c := *mem
		super.Members = append(super.Members, &c)
	}
	for i := range r.plan.Objects {
		obj := &r.plan.Objects[i]
		k := KeyOf(obj.Ref)
		if r.prevIdx[k] != nil {
			continue
		}
		super.Members = append(super.Members, &Member{
			Group: obj.Ref.Group, Version: obj.Ref.Version, Kind: obj.Ref.Kind,
			Namespace: obj.Ref.Namespace, Name: obj.Ref.Name, Stage: obj.Stage,
			Adopted: r.adopted[k],
		})
	}
	return super
}

// reread reads the inventory again after another writer changed it.
func (r *Run) reread(ctx context.Context) error {
	prev, err := r.m.store.loadFor(ctx, r.app)
	if err != nil {
		return err
	}
	r.prev, r.prevIdx = prev, prev.inv.Index()
	return nil
}

// Revision returns the commit SHA the inventory records as last applied
// and pruned, as Begin read it; empty before the first.
func (r *Run) Revision() string { return r.prev.inv.Revision }

// SetRevision sets the commit SHA this run applies. Finish records it as
// the last applied revision once the apply completed, unless the prune
// was refused as rewound.
func (r *Run) SetRevision(sha string) { r.revision = sha }

// Rewound refuses the run's prune (ReasonRewound, with msg): the revision
// does not descend from the one last applied. The apply goes ahead; the
// recorded revision stays the last one pruned, so later runs of the
// rewound line stay refused until a revision descends from it again or
// the app allows rewinds.
func (r *Run) Rewound(msg string) { r.rewound = msg }

// ID returns the app's ApplySet ID.
func (r *Run) ID() string { return r.id }

// Hooks returns ao with the inventory's hooks set: the part-of label on
// every object, reads from the watch cache, and the skip of objects that
// did not change since syncd last applied them.
func (r *Run) Hooks(ao applier.ApplyOptions) applier.ApplyOptions {
	ao = WithPartOf(ao, r.id)
	ao.Live = r
	ao.Skip = r.skip
	return ao
}

// WithPartOf returns ao with the ApplySet part-of label of id added to
// the labels every applied object gets: the label that makes an object a
// member of the app (and keeps a preview from showing it removed). ao's
// own labels are copied, not changed.
func WithPartOf(ao applier.ApplyOptions, id string) applier.ApplyOptions {
	labels := map[string]string{}
	for k, v := range ao.Labels {
		labels[k] = v
	}
	labels[LabelPartOf] = id
	ao.Labels = labels
	return ao
}

// skip reports whether obj is as syncd left it (appliedAsRecorded): the
// same slices (manager and hash) as last applied, and the same
// managedFields entries of their managers as right after that apply (or
// the same resourceVersion, still labelled as a member).
func (r *Run) skip(obj *planner.Object, live *unstructured.Unstructured) bool {
	return appliedAsRecorded(r.prevIdx[KeyOf(obj.Ref)], obj, metaOf(live), r.id)
}

var _ applier.LiveReader = (*Run)(nil)

// Live answers the applier's read of an object: from the watch cache,
// else from what Begin read, else with a GET of its metadata.
func (r *Run) Live(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error) {
	wk, ri, err := r.resource(ref)
	if err != nil {
		return nil, err
	}
	if !r.m.opts.NoWatch {
		if pom, ok := r.m.tracker.get(wk, ref.Name); ok {
			return toUnstructured(ref, pom)
		}
	}
	k := KeyOf(ref)
	r.mu.Lock()
	s, ok := r.known[k]
	delete(r.known, k)
	r.mu.Unlock()
	switch {
	case ok && s == nil:
		return nil, apierrors.NewNotFound(wk.gvr.GroupResource(), ref.Name)
	case ok && s.meta != nil:
		return toUnstructured(ref, s.meta)
	}
	// Not read by Begin, or kept as its resourceVersion only (as syncd
	// left it) and yet asked for: read it.
	pom, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return toUnstructured(ref, pom)
}

// resource maps a ref to its watch key and metadata client. Mappings are
// cached for the run: a discovery mapper's RESTMapping allocates a lot per
// call, and a run asks for the same few kinds thousands of times.
func (r *Run) resource(ref planner.ObjectRef) (watchKey, metadata.ResourceInterface, error) {
	gvk := ref.GVK()
	r.mu.Lock()
	mapping, ok := r.mappings[gvk]
	r.mu.Unlock()
	if !ok {
		var err error
		mapping, err = r.m.mapper.RESTMapping(ref.GroupKind(), ref.Version)
		if err != nil {
			return watchKey{}, nil, fmt.Errorf("%s: map kind: %w", ref, err)
		}
		r.mu.Lock()
		if r.mappings == nil {
			r.mappings = map[schema.GroupVersionKind]*meta.RESTMapping{}
		}
		r.mappings[gvk] = mapping
		r.mu.Unlock()
	}
	k := watchKey{gvr: mapping.Resource, id: r.id, user: identity.User(r.app.Tenant)}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		k.namespace = ref.Namespace
		return k, r.md.Resource(mapping.Resource).Namespace(ref.Namespace), nil
	}
	return k, r.md.Resource(mapping.Resource), nil
}

// prefetch starts the watches of the plan's resources and namespaces and
// reads the plan objects they do not hold.
func (r *Run) prefetch(ctx context.Context, lists map[watchKey]map[string]aheadItem) error {
	var groups byResource[*planner.Object]
	for i := range r.plan.Objects {
		obj := &r.plan.Objects[i]
		wk, ri, err := r.resource(obj.Ref)
		if err != nil {
			// A kind the cluster does not know yet (its CRD is in this
			// plan): nothing of it exists, the applier reads it itself.
			if isNoMatch(err) {
				continue
			}
			return err
		}
		if !r.m.opts.NoWatch {
			r.m.tracker.ensure(ctx, wk, r.watcher)
			if err := ctx.Err(); err != nil {
				return err
			}
			if _, ok := r.m.tracker.get(wk, obj.Ref.Name); ok {
				continue
			}
		}
		if r.fromAhead(lists, wk, obj) {
			continue
		}
		groups.add(wk, ri, obj)
	}
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(r.m.opts.Concurrency)
	for _, g := range groups.groups {
		if len(g.items) >= listThreshold {
			eg.Go(func() error { return r.list(ectx, g.key, g.ri, g.items) })
			continue
		}
		for _, obj := range g.items {
			eg.Go(func() error {
				pom, err := g.ri.Get(ectx, obj.Ref.Name, metav1.GetOptions{})
				if apierrors.IsNotFound(err) {
					pom, err = nil, nil
				}
				if err != nil {
					return readBeforeApplyError(obj, err)
				}
				r.remember(obj, pom)
				return nil
			})
		}
	}
	return eg.Wait()
}

// readBeforeApplyError is the error of the read before obj's apply: its
// manifest (file#document) and the object, and, when the app's identity
// may not read it (a tenant's account, or syncd's narrowed RBAC), what
// to do about it.
func readBeforeApplyError(obj *planner.Object, err error) error {
	where := obj.Ref.String()
	if obj.Origin != "" {
		where = obj.Origin + ": " + where
	}
	if apierrors.IsForbidden(err) {
		return fmt.Errorf("%s: read before apply: %w: grant the user the error names get, list, watch, create and patch on it, or remove it from the app's manifests (an app with serviceAccountName writes only what its account may)", where, err)
	}
	return fmt.Errorf("%s: read before apply: %w", where, err)
}

// list reads every object of one resource and namespace (metadata only,
// paginated) and remembers the ones the plan names.
func (r *Run) list(ctx context.Context, wk watchKey, ri metadata.ResourceInterface, objs []*planner.Object) error {
	want := make(map[string]*planner.Object, len(objs))
	for _, o := range objs {
		want[o.Ref.Name] = o
	}
	err := listAll(ctx, ri, "", func(live *metav1.PartialObjectMetadata) error {
		o := want[live.Name]
		if o == nil {
			return nil
		}
		r.remember(o, live)
		delete(want, o.Ref.Name)
		return nil
	})
	if err != nil {
		return fmt.Errorf("list %s in %q before apply: %w", wk.gvr, wk.namespace, err)
	}
	for _, o := range want {
		r.remember(o, nil)
	}
	return nil
}

// listAll pages through a metadata LIST of ri (listPage items a page),
// label-selected by selector when it is not empty, and calls fn for each
// item; an error of the LIST or of fn ends it.
func listAll(ctx context.Context, ri metadata.ResourceInterface, selector string, fn func(*metav1.PartialObjectMetadata) error) error {
	opts := metav1.ListOptions{LabelSelector: selector, Limit: listPage}
	for {
		list, err := ri.List(ctx, opts)
		if err != nil {
			return err
		}
		for i := range list.Items {
			if err := fn(&list.Items[i]); err != nil {
				return err
			}
		}
		if list.Continue == "" {
			return nil
		}
		opts.Continue = list.Continue
	}
}

// remember stores what was read for obj (seenAs) and notes adoption: an
// object new to the inventory that exists without the app's part-of
// label. live may be an item of a LIST page: nothing of the page's array
// is kept.
func (r *Run) remember(obj *planner.Object, live *metav1.PartialObjectMetadata) {
	k := KeyOf(obj.Ref)
	s := seenAs(r.prevIdx[k], obj, live)
	r.mu.Lock()
	defer r.mu.Unlock()
	r.known[k] = s
	if live != nil && r.prevIdx[k] == nil && live.Labels[LabelPartOf] != r.id {
		r.adopted[k] = true
	}
}

// forgetReads drops what Begin read for the applier's reads (known): the
// applier has run when Finish starts. Each read deletes its entry, but a
// Go map keeps its table as entries are deleted, so without this the
// emptied table sized for every plan object Begin read (1.3 MB at 10,000
// objects) stayed live through the prune and the inventory's write, the
// one-shot no-op's peak. A read after it finds nothing and GETs the
// object, as for an object Begin did not read.
func (r *Run) forgetReads() {
	r.mu.Lock()
	r.known = nil
	r.mu.Unlock()
}

// isNoMatch reports whether err says the cluster does not know a kind.
func isNoMatch(err error) bool {
	var nk *meta.NoKindMatchError
	var nr *meta.NoResourceMatchError
	return errors.As(err, &nk) || errors.As(err, &nr)
}
