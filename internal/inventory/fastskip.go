package inventory

import (
	"context"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

var _ applier.UnchangedReader = (*Run)(nil)

// Unchanged answers the applier's skip question from the watch cache's
// metadata without converting it into a live object: the same check as
// skip (slice hashes, and the managers' managedFields entries or the
// resourceVersion and part-of label), minus the
// allocation of a whole object for every member of a no-op sync.
func (r *Run) Unchanged(_ context.Context, obj *planner.Object) (string, bool) {
	if r.m.opts.NoWatch {
		return "", false
	}
	wk, _, err := r.resource(obj.Ref)
	if err != nil {
		return "", false
	}
	pom, ok := r.m.tracker.get(wk, obj.Ref.Name)
	if !ok {
		return "", false
	}
	if !appliedAsRecorded(r.prevIdx[KeyOf(obj.Ref)], obj, metaOf(pom), r.id) {
		return "", false
	}
	return pom.GetResourceVersion(), true
}
