package inventory

import (
	"context"
	"fmt"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// Unchanged is what an app's inventory and its members' live metadata say
// about a plan, for a preview that dry-runs only what changed.
type Unchanged struct {
	// Parent names the app's parent Secret ("<namespace>/<name>").
	Parent string
	// Exists is false when the app has no parent yet (syncd never
	// applied it): every object must be dry-run.
	Exists bool
	// Members is how many objects the inventory records.
	Members int
	// Objects are the plan objects exactly as syncd last applied them:
	// the same slices (manager and hash) as recorded, the recorded
	// resourceVersion, and still labelled as members. Nothing about them
	// changed since, so a dry run of them finds nothing to do.
	Objects map[Key]bool
	// Unlisted says, per resource and namespace whose members could not
	// be listed, why; their objects are not in Objects.
	Unlisted []string

	// prev is the inventory as read, for PreviewPrune.
	prev *loaded
}

// Unchanged reads app's inventory (one GET of its parent) and, for the
// plan objects it records as applied with the plan's slices, their live
// metadata: one metadata-only LIST per resource and namespace, selected by
// the app's part-of label (paginated by 500). It returns the objects
// exactly as syncd last applied them, by the same test the daemon uses to
// skip an apply. It writes nothing and starts no watch.
//
// The members are listed as the app's identity (its serviceAccountName,
// when set), the parent as syncd.
//
// A parent that cannot be read is an error; a missing parent is an
// Unchanged with Exists false. A LIST that fails (no list permission, a
// kind gone) is noted in Unlisted and its objects are left out: they are
// treated as changed.
func (m *Manager) Unchanged(ctx context.Context, app App, plan *planner.Plan) (*Unchanged, error) {
	md, err := m.members(app)
	if err != nil {
		return nil, err
	}
	l, err := m.store.loadFor(ctx, app)
	if err != nil {
		return nil, err
	}
	out := &Unchanged{
		Parent:  m.opts.Namespace + "/" + ParentName(app.Name),
		Exists:  l.exists,
		Members: len(l.inv.Members),
		Objects: map[Key]bool{},
		prev:    l,
	}
	idx := l.inv.Index()
	type group struct {
		gvr       schema.GroupVersionResource
		namespace string
		objs      map[string]*planner.Object
	}
	groups := map[watchKey]*group{}
	var order []watchKey
	mappings := map[schema.GroupVersionKind]*meta.RESTMapping{}
	for i := range plan.Objects {
		obj := &plan.Objects[i]
		mem := idx[KeyOf(obj.Ref)]
		if mem == nil || (mem.ResourceVersion == "" && !recordsOwned(mem)) || !sameApplied(mem, obj) {
			continue
		}
		gvk := obj.Ref.GVK()
		mapping, ok := mappings[gvk]
		if !ok {
			mapping, err = m.mapper.RESTMapping(obj.Ref.GroupKind(), obj.Ref.Version)
			if err != nil {
				// A kind the cluster does not know (any more): the dry
				// run reports it.
				mappings[gvk] = nil
				continue
			}
			mappings[gvk] = mapping
		}
		if mapping == nil {
			continue
		}
		k := watchKey{gvr: mapping.Resource, id: l.inv.ID}
		if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
			k.namespace = obj.Ref.Namespace
		}
		g := groups[k]
		if g == nil {
			g = &group{gvr: k.gvr, namespace: k.namespace, objs: map[string]*planner.Object{}}
			groups[k] = g
			order = append(order, k)
		}
		g.objs[obj.Ref.Name] = obj
	}

	var mu sync.Mutex
	selector := labels.Set{LabelPartOf: l.inv.ID}.AsSelector().String()
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(m.opts.Concurrency)
	for _, k := range order {
		g := groups[k]
		eg.Go(func() error {
			ri := md.Resource(g.gvr).Namespace(g.namespace)
			var same []Key
			err := listAll(ectx, ri, selector, func(live *metav1.PartialObjectMetadata) error {
				obj := g.objs[live.Name]
				if obj != nil && appliedAsRecorded(idx[KeyOf(obj.Ref)], obj, metaOf(live), l.inv.ID) {
					same = append(same, KeyOf(obj.Ref))
				}
				return nil
			})
			if err != nil {
				if ctx.Err() != nil {
					return ctx.Err()
				}
				mu.Lock()
				out.Unlisted = append(out.Unlisted, fmt.Sprintf("list %s in %q: %v", g.gvr, g.namespace, err))
				mu.Unlock()
				return nil
			}
			mu.Lock()
			for _, k := range same {
				out.Objects[k] = true
			}
			mu.Unlock()
			return nil
		})
	}
	if err := eg.Wait(); err != nil {
		return nil, err
	}
	sort.Strings(out.Unlisted)
	return out, nil
}

// appliedAsRecorded reports whether an object whose live resourceVersion,
// labels and managedFields are given is as syncd left it after its last
// apply, judged on syncd's own fields: the member records the plan
// object's slices (manager and hash: the declared values are the ones
// applied) and either every slice's manager still has the managedFields
// entries recorded right after that apply (nobody took or changed a field
// of syncd's since, whatever else was written: a controller's status or
// metadata, another app applying the same values) and the object carries
// a part-of label (this app's, or that of another app holding it too), or
// the object still has the recorded resourceVersion and is labelled as a
// member of id.
func appliedAsRecorded(mem *Member, obj *planner.Object, live liveMeta, id string) bool {
	if mem == nil || !sameApplied(mem, obj) {
		return false
	}
	if ownedAsRecorded(mem, live.managedFields) && live.labels[LabelPartOf] != "" {
		// The part-of label is this app's, or another app's that holds
		// the object too (the applier leaves it to that app); with no
		// label, the apply would add this app's.
		return true
	}
	return mem.ResourceVersion != "" && mem.ResourceVersion == live.resourceVersion && live.labels[LabelPartOf] == id
}

// liveMeta is what appliedAsRecorded reads of a live object.
type liveMeta struct {
	resourceVersion string
	labels          map[string]string
	managedFields   []metav1.ManagedFieldsEntry
}

// metaOf returns the liveMeta of an object's metadata.
func metaOf(o metav1.Object) liveMeta {
	return liveMeta{resourceVersion: o.GetResourceVersion(), labels: o.GetLabels(), managedFields: o.GetManagedFields()}
}

// ownedAsRecorded reports whether every slice of mem records a
// fingerprint and the live managedFields give each manager the same one,
// and every manager a slice yielded fields to still holds what it held
// (yieldedAsRecorded).
func ownedAsRecorded(mem *Member, mfs []metav1.ManagedFieldsEntry) bool {
	if len(mem.Slices) == 0 {
		return false
	}
	for _, s := range mem.Slices {
		if s.Owned == "" || !ownership.HasFingerprint(mfs, s.Manager, s.Owned) || !yieldedAsRecorded(s, mfs) {
			return false
		}
	}
	return true
}

// yieldedAsRecorded reports whether every manager slice s yielded fields
// to holds in mfs what it held right after the apply. One that let a
// field go (or lost it to another writer) makes the object changed: the
// next apply sends Git's value for that field again.
func yieldedAsRecorded(s SliceHash, mfs []metav1.ManagedFieldsEntry) bool {
	if s.Yield == nil {
		return true
	}
	for _, h := range s.Yield.To {
		if !ownership.HasHolding(mfs, h.Manager, h.Fields) {
			return false
		}
	}
	return true
}

// recordsOwned reports whether mem records a fingerprint for a slice.
func recordsOwned(mem *Member) bool {
	for _, s := range mem.Slices {
		if s.Owned != "" {
			return true
		}
	}
	return false
}
