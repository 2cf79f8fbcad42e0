package reconcile

import (
	"context"
	"sync"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// primeThreshold is how many objects of one resource and namespace to
// dry-run make one paginated LIST cheaper than a GET each.
const primeThreshold = 16

// primePage is the page size of those LISTs.
const primePage = 500

// dryRunClient is the dynamic client of a preview (Runner.Preview, syncd
// plan). Nothing a preview sends
// is stored (every apply carries dryRun=All), so what the API server
// answered once holds for the whole plan, and the applier's repeated
// requests for one object are answered from memory:
//
//   - a GET of an object read before (the applier reads it to apply and
//     again to preview; prime reads many at once with a LIST);
//   - a dry-run apply identical to one sent before (same object, manager,
//     body and force), as the applier sends to predict conflicts and then
//     to apply;
//   - a forced dry-run apply whose unforced twin succeeded: force only
//     decides conflicts, and there were none.
//
// Only successes and NotFound answers are remembered; every other request
// (other verbs, subresources, real writes) goes to the API server.
//
// Answers are shared, not copied: the object a GET or a dry-run apply
// returns is the one remembered and handed to every later identical
// request. The applier only reads the objects a client returns (it builds
// what it sends from Git, and Preview copies a dry-run result before
// putting held fields back), and the report only reads them; a copy per
// answer was five deep copies of every object, managedFields included,
// about a tenth of a large plan's allocations.
type dryRunClient struct {
	dynamic.Interface

	mu      sync.Mutex
	gets    map[objKey]getAnswer
	applies map[applyKey]*unstructured.Unstructured
}

var _ dynamic.Interface = (*dryRunClient)(nil)

type objKey struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}

// named is k for the object called name.
func (k objKey) named(name string) objKey {
	k.name = name
	return k
}

type getAnswer struct {
	obj *unstructured.Unstructured // nil: NotFound
	err error
}

type applyKey struct {
	objKey
	manager string
	force   bool
	body    string
}

func newDryRunClient(dyn dynamic.Interface) *dryRunClient {
	return &dryRunClient{Interface: dyn, gets: map[objKey]getAnswer{}, applies: map[applyKey]*unstructured.Unstructured{}}
}

// Resource returns the resource's client, answering from memory where it
// can.
func (c *dryRunClient) Resource(gvr schema.GroupVersionResource) dynamic.NamespaceableResourceInterface {
	inner := c.Interface.Resource(gvr)
	return &dryRunResource{NamespaceableResourceInterface: inner, m: memo{c: c, ri: inner, gvr: gvr}}
}

// dryRunResource is a resource cluster-wide; Namespace narrows it.
type dryRunResource struct {
	dynamic.NamespaceableResourceInterface
	m memo
}

func (r *dryRunResource) Namespace(ns string) dynamic.ResourceInterface {
	ri := r.NamespaceableResourceInterface.Namespace(ns)
	return &dryRunNamespaced{ResourceInterface: ri, m: memo{c: r.m.c, ri: ri, gvr: r.m.gvr, namespace: ns}}
}

func (r *dryRunResource) Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	return r.m.get(ctx, name, opts, subresources...)
}

func (r *dryRunResource) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error) {
	return r.m.patch(ctx, name, pt, data, opts, subresources...)
}

// dryRunNamespaced is a resource in one namespace.
type dryRunNamespaced struct {
	dynamic.ResourceInterface
	m memo
}

func (r *dryRunNamespaced) Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	return r.m.get(ctx, name, opts, subresources...)
}

func (r *dryRunNamespaced) Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error) {
	return r.m.patch(ctx, name, pt, data, opts, subresources...)
}

// memo answers one resource's GETs and dry-run applies from the client's
// memory, else from ri.
type memo struct {
	c         *dryRunClient
	ri        dynamic.ResourceInterface
	gvr       schema.GroupVersionResource
	namespace string
}

func (m memo) key(name string) objKey {
	return objKey{gvr: m.gvr, namespace: m.namespace, name: name}
}

func (m memo) get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if len(subresources) > 0 || opts.ResourceVersion != "" {
		return m.ri.Get(ctx, name, opts, subresources...)
	}
	k := m.key(name)
	m.c.mu.Lock()
	a, ok := m.c.gets[k]
	m.c.mu.Unlock()
	if ok {
		if a.obj == nil {
			return nil, a.err
		}
		return a.obj, nil
	}
	u, err := m.ri.Get(ctx, name, opts)
	switch {
	case err == nil:
		m.c.remember(k, getAnswer{obj: u})
	case apierrors.IsNotFound(err):
		m.c.remember(k, getAnswer{err: err})
	}
	return u, err
}

func (m memo) patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error) {
	if pt != types.ApplyPatchType || len(subresources) > 0 || len(opts.DryRun) != 1 || opts.DryRun[0] != metav1.DryRunAll {
		return m.ri.Patch(ctx, name, pt, data, opts, subresources...)
	}
	k := applyKey{objKey: m.key(name), manager: opts.FieldManager, force: opts.Force != nil && *opts.Force, body: string(data)}
	unforced := k
	unforced.force = false
	m.c.mu.Lock()
	res, ok := m.c.applies[k]
	if !ok && k.force {
		res, ok = m.c.applies[unforced]
	}
	m.c.mu.Unlock()
	if ok {
		return res, nil
	}
	u, err := m.ri.Patch(ctx, name, pt, data, opts)
	if err == nil {
		m.c.mu.Lock()
		m.c.applies[k] = u
		m.c.mu.Unlock()
	}
	return u, err
}

func (c *dryRunClient) remember(k objKey, a getAnswer) {
	c.mu.Lock()
	c.gets[k] = a
	c.mu.Unlock()
}

// prime reads the plan's objects with one paginated LIST per resource and
// namespace that has at least primeThreshold of them, so that the
// applier's GETs of those are answered from memory. A LIST that fails (no
// list permission) is ignored: those objects are read with GETs.
func (c *dryRunClient) prime(ctx context.Context, mapper meta.RESTMapper, plan *planner.Plan, concurrency int) error {
	if concurrency <= 0 {
		concurrency = applier.DefaultConcurrency
	}
	var eg errgroup.Group
	eg.SetLimit(concurrency)
	for _, g := range c.groupsOf(mapper, plan) {
		if len(g.names) < primeThreshold {
			continue
		}
		eg.Go(func() error { return c.primeGroup(ctx, g) })
	}
	return eg.Wait()
}

// objGroup is the plan's objects of one resource and namespace.
type objGroup struct {
	ri    dynamic.ResourceInterface
	key   objKey
	names map[string]bool
}

// groupsOf groups the plan's objects by resource and namespace, in plan
// order. Objects of a kind the mapper does not know are left out: the
// applier reports them.
func (c *dryRunClient) groupsOf(mapper meta.RESTMapper, plan *planner.Plan) []*objGroup {
	groups := map[objKey]*objGroup{}
	var order []*objGroup
	mappings := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for i := range plan.Objects {
		ref := plan.Objects[i].Ref
		mapping, ok := mappings[ref.GVK()]
		if !ok {
			mapping, _ = mapper.RESTMapping(ref.GroupKind(), ref.Version)
			mappings[ref.GVK()] = mapping
		}
		if mapping == nil {
			continue
		}
		k := objKey{gvr: mapping.Resource}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			k.namespace = ref.Namespace
		}
		g := groups[k]
		if g == nil {
			g = &objGroup{key: k, names: map[string]bool{}, ri: c.resourceOf(k)}
			groups[k] = g
			order = append(order, g)
		}
		g.names[ref.Name] = true
	}
	return order
}

// resourceOf is the unmemoised client of one resource and namespace.
func (c *dryRunClient) resourceOf(k objKey) dynamic.ResourceInterface {
	if k.namespace != "" {
		return c.Interface.Resource(k.gvr).Namespace(k.namespace)
	}
	return c.Interface.Resource(k.gvr)
}

// primeGroup lists one group's objects (paginated by primePage) and
// remembers each of its names as found or NotFound. A LIST that fails
// leaves the group to GETs; only ctx ending fails the prime.
func (c *dryRunClient) primeGroup(ctx context.Context, g *objGroup) error {
	found := map[objKey]getAnswer{}
	opts := metav1.ListOptions{Limit: primePage}
	for {
		list, err := g.ri.List(ctx, opts)
		if err != nil {
			// No list permission, say: GETs read them.
			return ctx.Err()
		}
		for i := range list.Items {
			if u := &list.Items[i]; g.names[u.GetName()] {
				found[g.key.named(u.GetName())] = getAnswer{obj: u}
			}
		}
		if list.GetContinue() == "" {
			break
		}
		opts.Continue = list.GetContinue()
	}
	for name := range g.names {
		k := g.key.named(name)
		if _, in := found[k]; !in {
			found[k] = getAnswer{err: apierrors.NewNotFound(g.key.gvr.GroupResource(), name)}
		}
	}
	c.mu.Lock()
	for k, a := range found {
		c.gets[k] = a
	}
	c.mu.Unlock()
	return nil
}
