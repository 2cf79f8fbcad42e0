package inventory

import (
	"context"
	"errors"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// PreviewPrune reports what the prune after applying plan would do, for a
// pull-request preview: the objects of app's inventory that plan no
// longer has, each deleted, orphaned or spared with the guard's reason,
// or the guard that refuses the whole prune. applied says whether the
// apply the preview predicts completes (no blocking conflict, nothing
// refused): when it does not, the prune is refused as it would be.
//
// It reads the inventory (one GET of its parent, unless read is the
// Unchanged of the same plan: its inventory is used) and the live
// metadata of the objects that left Git (a LIST per resource and
// namespace holding many of them, a GET for the others), and writes
// nothing. An app syncd never applied has nothing to prune.
func (m *Manager) PreviewPrune(ctx context.Context, app App, plan *planner.Plan, applied bool, read *Unchanged) (*Report, error) {
	md, err := m.members(app)
	if err != nil {
		return nil, err
	}
	var prev *loaded
	if read != nil && read.prev != nil {
		prev = read.prev
	} else {
		if prev, err = m.store.loadFor(ctx, app); err != nil {
			return nil, err
		}
	}
	r := &Run{
		m: m, app: app, plan: plan, dryRun: true, id: prev.inv.ID, md: md,
		prev: prev, prevIdx: prev.inv.Index(),
		adopted: map[Key]bool{}, known: map[Key]*seen{},
	}
	cs := &applier.ChangeSet{App: app.Name, Revision: plan.Revision, DryRun: true}
	var applyErr error
	if !applied {
		applyErr = errors.New("the preview predicts objects that would not be applied")
	}
	return r.Finish(ctx, cs, applyErr)
}
