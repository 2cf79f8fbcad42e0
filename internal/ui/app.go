package ui

import (
	"cmp"
	"context"
	"slices"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// appPage is what the App page shows.
type appPage struct {
	Row     *AppRow
	Stages  []stageGroup
	Blocked []*inventory.Member
}

// stageGroup is the objects of one stage, sorted by kind, namespace and
// name.
type stageGroup struct {
	Stage   planner.Stage
	Objects []*inventory.Member
}

// app builds the App page: the app's row (its status) and the objects of
// its inventory by stage.
func (s *Server) app(ctx context.Context, ref AppRef) (*appPage, error) {
	rows, _, err := s.appRows(ctx)
	if err != nil {
		return nil, err
	}
	page := &appPage{}
	for i := range rows {
		if rows[i].Ref == ref {
			page.Row = &rows[i]
		}
	}
	if page.Row == nil {
		return nil, errNotFound
	}
	inv, err := s.opts.Inventory.Load(ctx, ref.Inventory())
	if err != nil {
		return nil, err
	}
	page.Stages, page.Blocked = groupMembers(inv.Members)
	return page, nil
}

// groupMembers sorts an inventory's members into stages (in apply
// order), and apart the members a prune left behind (Blocked).
func groupMembers(members []*inventory.Member) ([]stageGroup, []*inventory.Member) {
	byStage := map[planner.Stage][]*inventory.Member{}
	var blocked []*inventory.Member
	for _, m := range members {
		if m.Blocked != "" {
			blocked = append(blocked, m)
			continue
		}
		byStage[m.Stage] = append(byStage[m.Stage], m)
	}
	var out []stageGroup
	for st, ms := range byStage {
		slices.SortFunc(ms, compareMembers)
		out = append(out, stageGroup{Stage: st, Objects: ms})
	}
	slices.SortFunc(out, func(a, b stageGroup) int { return cmp.Compare(a.Stage, b.Stage) })
	slices.SortFunc(blocked, compareMembers)
	return out, blocked
}

func compareMembers(a, b *inventory.Member) int {
	return cmp.Or(cmp.Compare(a.Kind, b.Kind), cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name))
}
