package applier

import (
	"slices"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// The ownership moves of one object, as data: which apply requests bring
// the object's managedFields from what they are to what the plan wants
// without a field ever being left without an owner (the API server would
// delete it, reset it to its default, or refuse the request when it is
// required). The functions here are pure, over field sets, and tested
// offline (moves_test.go) with operation scripts; update.go and create.go
// send the steps (dry run is theirs to decide, not the plan's) and the
// API-server tests prove the sequences end to end (see
// ../shared/SSA_SEQUENCES.md for the sequences verified on a real API
// server).

// Purpose says why a step is sent.
type Purpose string

const (
	// PurposeWhole creates an object split between several managers: the
	// whole object under the default manager, so that validation sees
	// every field.
	PurposeWhole Purpose = "whole"
	// PurposeShare is the first phase of a move: a manager applies its
	// new fields plus the ones it is giving to another of the app's
	// managers, so both own them for a moment.
	PurposeShare Purpose = "share"
	// PurposeExact is a manager's exact slice: what it owns from now on.
	PurposeExact Purpose = "exact"
	// PurposeHold keeps fields the manager is about to drop at their live
	// value under its handoff manager, where dropping them would reset
	// them to a server default (the HPA replicas trap). Which of the
	// step's fields would reset is the API server's to say (a dry run of
	// the manager's next request), so the sender decides.
	PurposeHold Purpose = "hold"
	// PurposeRelease lets an old manager of the app (renamed, or removed
	// from the split) go of every field: an identity-only apply.
	PurposeRelease Purpose = "release"
	// PurposeTakeover moves the fields the app's managers now share with
	// legacy managers (client-side kubectl apply, apps[].migrate) to the
	// app's managers alone: a managedFields patch, not an apply.
	PurposeTakeover Purpose = "takeover"
	// PurposeLetGo releases one of the app's handoff managers once
	// someone else owns every field it holds (or at once with handoff:
	// release).
	PurposeLetGo Purpose = "let-go"
)

// noSlice is a step's Slice when the step belongs to no slice of the
// plan (an old manager, a handoff manager, the takeover).
const noSlice = -1

// step is one request of an object's ownership moves.
type step struct {
	Purpose Purpose
	// Manager sends the request; for PurposeHold, the manager whose
	// fields are held (its handoff manager sends).
	Manager planner.FieldManager
	// Slice is the index of the plan slice the step sends or belongs to,
	// or noSlice.
	Slice int
	// Fields are the fields sent: the slice's (exact), the slice's plus
	// those it gives away (share), the candidates to hold (hold); nil for
	// identity-only requests and the takeover.
	Fields *fieldpath.Set
	Force  bool
}

// sliceFields is what the planner needs of one slice: its manager and
// the fields it applies.
type sliceFields struct {
	Manager planner.FieldManager
	Fields  *fieldpath.Set
}

// appManagers tells the app's own managers from everyone else's: the
// managers of the plan's slices, the app's old managers still on the
// object, and the handoff managers of both.
type appManagers struct {
	current map[planner.FieldManager]bool
	old     []planner.FieldManager
}

// newAppManagers returns the app's managers for an object: the slices'
// and the old ones.
func newAppManagers(slices []sliceFields, old []planner.FieldManager) appManagers {
	am := appManagers{current: map[planner.FieldManager]bool{}, old: old}
	for _, s := range slices {
		am.current[s.Manager] = true
	}
	return am
}

// ours reports whether m is one of the app's managers or their handoff
// managers.
func (am appManagers) ours(m string) bool {
	base, _ := HandoffOwner(m)
	return am.current[base] || slices.Contains(am.old, base)
}

// isOld reports whether m is one of the app's old managers.
func (am appManagers) isOld(m string) bool {
	return slices.Contains(am.old, planner.FieldManager(m))
}

// moveInput is everything the ownership moves of an existing object
// depend on.
type moveInput struct {
	// Slices are the plan's slices as they will be sent (after conflicts
	// were resolved), default manager first.
	Slices []sliceFields
	// Live is the object's decoded managedFields.
	Live ownership.Ownership
	// Old are the app's managers the object records (its managers
	// annotation) that are no longer in the plan and still own fields.
	Old []planner.FieldManager
	// Force says, per slice, whether its exact apply forces (the policy
	// forced a conflict, or a field moves between the app's managers).
	Force []bool
	// ReleaseHandoff drops fields at once instead of holding them.
	ReleaseHandoff bool
	// Moving says fields move between the app's managers, as moving()
	// found on the slices before conflicts were resolved (the sender
	// decides it once, before its first request).
	Moving bool
}

// managers returns the input's app managers.
func (in moveInput) managers() appManagers { return newAppManagers(in.Slices, in.Old) }

// desired returns every field the app's slices apply.
func (in moveInput) desired() *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, s := range in.Slices {
		out = out.Union(s.Fields)
	}
	return out
}

// moving reports whether fields move between the app's managers: an old
// manager is still on the object, or a slice takes a field another of
// the app's managers owns and it does not yet. Fields both already own
// (the key fields of a list item split between them, such as a
// container's name) stay shared and are no move.
func (in moveInput) moving() bool {
	if len(in.Old) > 0 {
		return true
	}
	am := in.managers()
	for _, s := range in.Slices {
		others := in.Live.OwnedExcept(func(m string) bool { return m == string(s.Manager) || !am.ours(m) })
		incoming := s.Fields.Leaves().Difference(in.Live.Applied(string(s.Manager)).Leaves())
		if !incoming.Intersection(others).Empty() {
			return true
		}
	}
	return false
}

// share returns what slice i sends in the first phase of a move: its
// fields plus those of its live fields that another slice wants (it keeps
// them until that slice owns them), and whether the request is needed at
// all (it gives something away or takes something new).
func (in moveInput) share(i int) (*fieldpath.Set, bool) {
	s := in.Slices[i]
	mine := in.Live.Applied(string(s.Manager)).Leaves()
	keep := mine.Intersection(in.desired()).Difference(s.Fields)
	if keep.Empty() {
		return s.Fields, !s.Fields.Leaves().Difference(mine).Empty()
	}
	return s.Fields.Union(keep), true
}

// dropped returns the fields slice i's exact apply lets go of that nobody
// else will own afterwards: neither another slice nor another manager
// (the app's old and handoff managers do not count: they let go too).
func (in moveInput) dropped(i int) *fieldpath.Set {
	s := in.Slices[i]
	am := in.managers()
	after := in.Live.OwnedExcept(func(m string) bool {
		return m == string(s.Manager) || isHandoff(m) || am.isOld(m)
	})
	for j, o := range in.Slices {
		if j != i {
			after = after.Union(o.Fields)
		}
	}
	return in.Live.Applied(string(s.Manager)).Leaves().Difference(s.Fields).Difference(after)
}

// droppedByOld returns the fields old manager m lets go of that no slice
// wants and no other manager owns.
func (in moveInput) droppedByOld(m planner.FieldManager) *fieldpath.Set {
	am := in.managers()
	others := in.Live.OwnedExcept(am.ours)
	return in.Live.Applied(string(m)).Leaves().Difference(in.desired()).Difference(others)
}

// planCreate returns the steps that create an object. One slice is one
// apply. Several: the whole object under the default manager (validation
// needs every field), then each split slice (the fields become shared),
// then the default slice again (the default manager lets the split
// fields go); no field is ever missing from the live object.
func planCreate(sl []sliceFields) []step {
	if len(sl) == 1 {
		return []step{{Purpose: PurposeExact, Manager: sl[0].Manager, Slice: 0, Fields: sl[0].Fields}}
	}
	steps := []step{{Purpose: PurposeWhole, Manager: sl[0].Manager, Slice: 0, Fields: sliceFieldsUnion(sl)}}
	for i := 1; i < len(sl); i++ {
		steps = append(steps, step{Purpose: PurposeExact, Manager: sl[i].Manager, Slice: i, Fields: sl[i].Fields, Force: true})
	}
	return append(steps, step{Purpose: PurposeExact, Manager: sl[0].Manager, Slice: 0, Fields: sl[0].Fields, Force: true})
}

// sliceFieldsUnion returns every field of the slices.
func sliceFieldsUnion(sl []sliceFields) *fieldpath.Set {
	return moveInput{Slices: sl}.desired()
}

// planUpdate returns the steps that bring an existing object's ownership
// to the plan: during a move, each manager first shares what it takes
// and gives; then each manager's exact slice, after holding what it drops
// that would reset; then the old managers let go (holding likewise); then
// the takeover of fields shared with legacy managers. Handoff managers
// let go afterwards (planLetGo), judged on the ownership the steps left.
func planUpdate(in moveInput) []step {
	var steps []step
	if in.Moving {
		steps = append(steps, in.shareSteps()...)
	}
	for i := range in.Slices {
		steps = append(steps, in.sliceSteps(i)...)
	}
	for _, m := range in.Old {
		steps = append(steps, in.oldSteps(m)...)
	}
	return append(steps, step{Purpose: PurposeTakeover, Slice: noSlice})
}

// shareSteps are the first phase of a move: one forced share per slice
// that needs it.
func (in moveInput) shareSteps() []step {
	var steps []step
	for i, s := range in.Slices {
		if fields, needed := in.share(i); needed {
			steps = append(steps, step{Purpose: PurposeShare, Manager: s.Manager, Slice: i, Fields: fields, Force: true})
		}
	}
	return steps
}

// sliceSteps are slice i's second phase: hold what it drops (unless
// handoff: release), then its exact slice.
func (in moveInput) sliceSteps(i int) []step {
	s := in.Slices[i]
	var steps []step
	if d := in.dropped(i); !d.Empty() && !in.ReleaseHandoff {
		steps = append(steps, step{Purpose: PurposeHold, Manager: s.Manager, Slice: i, Fields: d, Force: in.Force[i]})
	}
	return append(steps, step{Purpose: PurposeExact, Manager: s.Manager, Slice: i, Fields: s.Fields, Force: in.Force[i]})
}

// oldSteps let old manager m go: hold what it drops (unless handoff:
// release), then release everything.
func (in moveInput) oldSteps(m planner.FieldManager) []step {
	var steps []step
	if d := in.droppedByOld(m); !d.Empty() && !in.ReleaseHandoff {
		steps = append(steps, step{Purpose: PurposeHold, Manager: m, Slice: noSlice, Fields: d, Force: true})
	}
	return append(steps, step{Purpose: PurposeRelease, Manager: m, Slice: noSlice, Force: true})
}

// planLetGo returns the releases of the app's handoff managers on an
// object whose ownership is final: each lets go once every field it
// holds has another owner, or at once when release is set.
func planLetGo(final ownership.Ownership, am appManagers, release bool) []step {
	var steps []step
	others := final.OwnedExcept(isHandoff)
	for _, e := range final.Entries {
		if !isHandoff(e.Manager) || !am.ours(e.Manager) {
			continue
		}
		if !release && !e.Set.Leaves().Difference(others).Empty() {
			continue
		}
		steps = append(steps, step{Purpose: PurposeLetGo, Manager: planner.FieldManager(e.Manager), Slice: noSlice, Force: true})
	}
	return steps
}
