package applier

import (
	"fmt"
	"time"

	"syncd.dev/syncd/internal/planner"
)

// Action is what happened to one manager's slice of one object.
type Action string

// Actions a Change can report.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
	// Conflicted means the slice was not applied because another manager
	// owns some of its fields and the policy said fail.
	Conflicted Action = "conflict"
	// Failed means the request failed for another reason; Err says why.
	Failed Action = "failed"
	// Skipped means the slice was not sent because an earlier failure
	// (its own object's or its stage's) made sending it unsafe.
	Skipped Action = "skipped"
	// Yielded means the slice was applied without the conflicting fields,
	// which stay with the other manager (policy yield).
	Yielded Action = "yielded"
	// Forced means the slice was applied with force, taking the
	// conflicting fields from the other manager (policy force).
	Forced Action = "forced"
	// HandoffPending means fields this manager dropped are held at their
	// live value by the handoff manager until another manager owns them.
	HandoffPending Action = "handoff-pending"
	// Recreated means the object was deleted and created again because an
	// immutable field changed and the app allows recreation.
	Recreated Action = "recreated"
	// Excluded means the object asked to be left alone (Change.Skip says
	// why: reconcile disabled, ssa: Ignore, or ssa: IfNotPresent on an
	// object that exists) and nothing was sent for it. Unlike Skipped it
	// is no failure: the apply is complete without it.
	Excluded Action = "excluded"
)

// Change is the outcome of one manager's slice of one object. A
// ChangeSet holds one per slice of the plan (50,000 of them for an app of
// 50,000 objects): what most changes leave empty is in Resolved, behind a
// pointer.
type Change struct {
	Object    planner.ObjectRef
	Manager   planner.FieldManager
	Action    Action
	Conflicts Conflicts
	// Resolved holds the conflicts the policy or the ownership rules
	// settled, the fields held for a handoff and the managers migrated
	// from; nil when there are none (read it with Resolution, which
	// answers for nil).
	Resolved *Resolution
	// Changed lists what the API server changed for this slice when it
	// wrote an existing object (Configured, and Forced, Yielded or
	// HandoffPending when written): the paths of the manager's fields
	// whose value changed, in the API server's notation, then the fields
	// it began or stopped owning with their value unchanged, marked
	// "(now owned)" or "(released)"; "metadata" when none of those
	// changed. Values are never listed. Empty when the server did not
	// write, for created objects, and when the write is only known from
	// the ownership moves of a rename or takeover (Migrated).
	Changed []string
	// Moved lists the fields this slice's manager took over from a
	// legacy manager (client-side apply, a manager the app migrates
	// from) with their value unchanged: the apply shared them, and the
	// legacy manager let them go.
	Moved []Move
	// ResourceVersion is the object's resourceVersion after the apply
	// (empty in dry runs and on failure).
	ResourceVersion string
	// Owned is the fingerprint (ownership.Fingerprint) of the manager's
	// managedFields entries after the apply, or as read when the object
	// was skipped as unchanged; empty in dry runs, on failure and when
	// the skip was decided without reading the object. A later run whose
	// read finds the same fingerprint knows nobody changed the manager's
	// fields since, whatever else was written (status, other managers'
	// metadata).
	Owned string
	// Health is the kstatus of the object after a wait ("Current", ...);
	// empty when not waited for.
	Health string
	// HealthMessage says why the object is not Current (kstatus's
	// message, and whether the wait timed out); empty when it is.
	HealthMessage string
	// Skip says why an Excluded change was left alone; nil otherwise.
	Skip *Skip
	// Err is set for Failed and Conflicted changes.
	Err      error
	Duration time.Duration
}

// Resolution is what a Change settled besides its write: conflicts the
// policy or the ownership rules decided, fields held for a handoff,
// managers migrated from.
type Resolution struct {
	// Yielded and Forced are the conflicts resolved by the policy.
	Yielded, Forced Conflicts
	// SameValue are conflicts over fields whose value the apply does not
	// change (a zero value the server omits, a default it fills in, under
	// another manager's ownership): not decided by the policy, the fields
	// are taken with force along with the rest of the slice, when nothing
	// else stops it, and keep their value.
	SameValue Conflicts
	// SameValueLeft are same-value conflicts with a manager of another
	// app that declares the field (its managers annotation names it):
	// the field is left to it, so that the two apps do not take it from
	// each other on every sync.
	SameValueLeft Conflicts
	// OtherInventory is set when the object is a member of another app's
	// inventory: the part-of label (owned by that app's manager) was left
	// to it and not applied, whatever the policy. The apps share the
	// object; the other app's inventory keeps it.
	OtherInventory Conflicts
	// Held lists the fields the handoff manager holds for this manager.
	Held []string
	// YieldedTo is what each manager this slice yielded fields to
	// (Yielded) holds right after the write, by manager: the record that
	// lets a later sync leave the object alone while those managers keep
	// their fields, and apply Git's value again once one lets go.
	YieldedTo []Holding
	// Migrated lists old managers of the object whose fields moved to the
	// current managers (manager rename, takeover from client-side apply
	// or the managers of apps[].migrate).
	Migrated []string
	// Unchecked says why a dry run's Created was not checked by the API
	// server (its namespace is created by the same apply); empty when it
	// was.
	Unchecked string
}

// Holding is what one manager holds of an object, as
// ownership.Holding digests its managedFields entries.
type Holding struct {
	Manager string
	Fields  string
}

// setHeld records the fields the handoff manager holds for the change's
// manager (none: nothing held).
func (c *Change) setHeld(held []string) {
	if len(held) == 0 && c.Resolved == nil {
		return
	}
	c.resolvedRecord().Held = held
}

// Resolution returns what the change settled besides its write (the
// zero Resolution when nothing).
func (c Change) Resolution() Resolution {
	if c.Resolved == nil {
		return Resolution{}
	}
	return *c.Resolved
}

// resolvedRecord returns the change's Resolution to record into, made on
// first use.
func (c *Change) resolvedRecord() *Resolution {
	if c.Resolved == nil {
		c.Resolved = &Resolution{}
	}
	return c.Resolved
}

// Wrote reports whether the API server wrote the object for this slice:
// it was created, recreated or configured, or it forced, yielded or
// handed off fields and the server wrote (Changed says what). Metrics,
// Events and alerts that count writes count these.
func (c Change) Wrote() bool {
	switch c.Action {
	case Created, Recreated, Configured:
		return true
	case Forced, Yielded, HandoffPending:
		return len(c.Changed) > 0
	}
	return false
}

// String returns a kubectl-like line: "ConfigMap ns/name created"; an
// Excluded change says why ("ConfigMap ns/name excluded: reconcile
// disabled (syncd.dev/reconcile: disabled)").
func (c Change) String() string {
	if c.Skip != nil {
		return fmt.Sprintf("%s %s: %s", c.Object, c.Action, c.Skip)
	}
	return fmt.Sprintf("%s %s", c.Object, c.Action)
}

// ChangeSet is the outcome of applying a plan, one Change per slice sent
// (or not sent), in the plan's order.
type ChangeSet struct {
	App      string
	Revision string
	DryRun   bool
	Changes  []Change
	// Validation is how the objects of the run were validated.
	Validation Validation
}

// Validation counts how the objects a run validated before writing them
// were judged: by the API server's dry run (DryRuns, refused ones
// included), by syncd without a dry run (Judged: new ConfigMaps nothing
// in the cluster but the API server's own validation can refuse,
// judge.go), or from the app's record of an accepted dry run of the same
// body against the same object (Known, ApplyOptions.Accepted).
type Validation struct {
	DryRuns, Judged, Known int
}

// Conflicts returns the changes that hit field conflicts.
func (cs *ChangeSet) Conflicts() []Change { return cs.filter(Conflicted) }

// Failures returns the changes that failed for reasons other than
// conflicts.
func (cs *ChangeSet) Failures() []Change { return cs.filter(Failed) }

// OK reports whether every slice was applied (no conflicts, failures or
// skips), the condition for pruning after it.
func (cs *ChangeSet) OK() bool {
	for _, c := range cs.Changes {
		switch c.Action {
		case Conflicted, Failed, Skipped:
			return false
		}
	}
	return true
}

// Unhealthy returns the changes waited for (ApplyOptions.Wait) whose
// object was not Current when the wait ended.
func (cs *ChangeSet) Unhealthy() []Change {
	var out []Change
	for _, c := range cs.Changes {
		if c.Health != "" && c.Health != "Current" {
			out = append(out, c)
		}
	}
	return out
}

// Holding returns the changes with fields the handoff manager holds
// (Resolution.Held).
func (cs *ChangeSet) Holding() []Change {
	var out []Change
	for _, c := range cs.Changes {
		if len(c.Resolution().Held) > 0 {
			out = append(out, c)
		}
	}
	return out
}

// Written returns how many slices the API server wrote (Change.Wrote;
// Writes says which).
func (cs *ChangeSet) Written() int { return cs.Writes().Total() }

// Count returns how many changes have the action.
func (cs *ChangeSet) Count(a Action) int {
	n := 0
	for i := range cs.Changes {
		if cs.Changes[i].Action == a {
			n++
		}
	}
	return n
}

func (cs *ChangeSet) filter(a Action) []Change {
	var out []Change
	for _, c := range cs.Changes {
		if c.Action == a {
			out = append(out, c)
		}
	}
	return out
}
