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
)

// Change is the outcome of one manager's slice of one object.
type Change struct {
	Object    planner.ObjectRef
	Manager   planner.FieldManager
	Action    Action
	Conflicts Conflicts
	// Err is set for Failed and Conflicted changes.
	Err      error
	Duration time.Duration
}

// String returns a kubectl-like line: "ConfigMap ns/name created".
func (c Change) String() string {
	return fmt.Sprintf("%s %s", c.Object, c.Action)
}

// ChangeSet is the outcome of applying a plan, one Change per slice sent
// (or not sent), in the plan's order.
type ChangeSet struct {
	App      string
	Revision string
	DryRun   bool
	Changes  []Change
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

// Count returns how many changes have the action.
func (cs *ChangeSet) Count(a Action) int { return len(cs.filter(a)) }

func (cs *ChangeSet) filter(a Action) []Change {
	var out []Change
	for _, c := range cs.Changes {
		if c.Action == a {
			out = append(out, c)
		}
	}
	return out
}
