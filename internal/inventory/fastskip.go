package inventory

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/directive"
	"syncd.dev/syncd/internal/planner"
)

var _ applier.UnchangedReader = (*Run)(nil)

// Unchanged answers the applier's skip question without converting
// anything into a live object: from the watch cache's metadata, else from
// what Begin read (seen). It is the skip's test (slice hashes, and the
// managers' managedFields entries or the resourceVersion and part-of
// label) on typed metadata, minus the allocation of a whole object for
// every member of a no-op sync. An object whose live metadata asks to be
// left alone (reconcile: disabled, ssa: Ignore, written in the cluster)
// is never unchanged here: the applier reads it and excludes it, as it
// does on the skip's path.
func (r *Run) Unchanged(_ context.Context, obj *planner.Object) (string, bool) {
	if !r.m.opts.NoWatch {
		if rv, ok, cached := r.cachedUnchanged(obj); cached {
			return rv, ok
		}
	}
	return r.knownUnchanged(obj)
}

// cachedUnchanged answers Unchanged from the watch cache; cached is false
// when the cache does not hold obj.
func (r *Run) cachedUnchanged(obj *planner.Object) (rv string, ok, cached bool) {
	wk, _, err := r.resource(obj.Ref)
	if err != nil {
		return "", false, false
	}
	pom, cached := r.m.tracker.get(wk, obj.Ref.Name)
	if !cached {
		return "", false, false
	}
	if liveExcluded(pom) || !appliedAsRecorded(r.prevIdx[KeyOf(obj.Ref)], obj, metaOf(pom), r.id) {
		return "", false, true
	}
	return pom.GetResourceVersion(), true, true
}

// knownUnchanged answers Unchanged from what Begin read of obj: true when
// Begin found it as syncd left it, judged against the member the run
// still holds (a reread of the inventory since makes it read again). The
// answer is given once: what Begin kept of the object is dropped.
func (r *Run) knownUnchanged(obj *planner.Object) (string, bool) {
	k := KeyOf(obj.Ref)
	r.mu.Lock()
	defer r.mu.Unlock()
	s := r.known[k]
	if s == nil || s.meta != nil || s.member != r.prevIdx[k] {
		return "", false
	}
	delete(r.known, k)
	return s.resourceVersion, true
}

// seen is what Begin read of one plan object that exists and that the
// watch cache does not hold.
type seen struct {
	// meta is the object's metadata, for the applier's read; nil when
	// it was found as syncd left it.
	meta *metav1.PartialObjectMetadata
	// resourceVersion is the object's, and member the inventory's record
	// it was found to be as syncd left it by (asLeft), when meta is nil.
	resourceVersion string
	member          *Member
}

// seenAs returns what to keep of live, the metadata read of plan object
// obj whose inventory record is mem (nil: not a member): nil when it is
// absent (live is nil), only its resourceVersion when it is as syncd left
// it (asLeft), else a copy of the metadata (not live itself, which may be
// an item of a LIST page: it would pin the whole page).
func seenAs(mem *Member, obj *planner.Object, live *metav1.PartialObjectMetadata) *seen {
	if live == nil {
		return nil
	}
	if asLeft(mem, obj, live) {
		return &seen{resourceVersion: live.ResourceVersion, member: mem}
	}
	c := *live
	return &seen{meta: &c}
}

// asLeft reports whether the object whose metadata is live is as syncd
// left it, judged the way the applier's skip would judge it after reading
// the object (appliedAsRecorded, and no live directive excludes it), on
// the first of appliedAsRecorded's tests alone: every slice's manager
// still has the managedFields entries recorded after the last apply, and
// the object is labelled part of an app. Then the skip would record the
// same fingerprints again, so nothing but the resourceVersion need be
// kept. (An object judged by its resourceVersion alone, a member recorded
// before fingerprints, is kept whole: its skip records them.)
func asLeft(mem *Member, obj *planner.Object, live *metav1.PartialObjectMetadata) bool {
	return mem != nil && sameApplied(mem, obj) && liveAsLeft(mem, live)
}

// liveAsLeft is asLeft's judgement of the live metadata of member mem,
// without the plan object: it is labelled part of an app, asks nothing of
// syncd, and every slice's manager still has the entries recorded.
func liveAsLeft(mem *Member, live *metav1.PartialObjectMetadata) bool {
	return live.Labels[LabelPartOf] != "" && !liveExcluded(live) && ownedAsRecorded(mem, live.ManagedFields)
}

// liveExcluded reports whether an object's live metadata asks syncd to
// leave it alone (reconcile: disabled or ssa: Ignore, as the applier reads
// them from a live object).
func liveExcluded(live *metav1.PartialObjectMetadata) bool {
	d := directive.Of(live)
	return d.ReconcileDisabled.Key != "" || d.Mode() == directive.SSAIgnore
}
