package inventory

import (
	"fmt"
	"strings"

	"syncd.dev/syncd/internal/directive"
	"syncd.dev/syncd/internal/planner"
)

// Reason names a prune guard. Each is also the reason label of
// syncd_prune_blocked_total.
type Reason string

// Guards that refuse a whole prune.
const (
	// ReasonSourceFailed: the source could not be fetched or verified.
	ReasonSourceFailed Reason = "source-failed"
	// ReasonRenderFailed: the manifests could not be rendered or planned.
	ReasonRenderFailed Reason = "render-failed"
	// ReasonClusterUnreachable: the app's cluster did not answer (a
	// remote cluster, apps[].cluster).
	ReasonClusterUnreachable Reason = "cluster-unreachable"
	// ReasonApplyIncomplete: some object was not applied (conflict,
	// failure, cancellation).
	ReasonApplyIncomplete Reason = "apply-incomplete"
	// ReasonEmptyRender: the render has no objects and the app does not
	// set allowEmpty.
	ReasonEmptyRender Reason = "empty-render"
	// ReasonBudget: the prune would delete more than the budget allows.
	ReasonBudget Reason = "budget"
	// ReasonDisabled: the app sets prune: false.
	ReasonDisabled Reason = "disabled"
	// ReasonForbidden: the app's serviceAccountName may not delete (or
	// patch, to orphan) some object prune would remove, so nothing is
	// removed; an object whose removal is refused as Forbidden at the
	// time of the request is spared with it too.
	ReasonForbidden Reason = "forbidden"
	// ReasonRewound: the revision does not descend from the one last
	// applied and pruned (a force-push, a rollback) and the app does not
	// set allowRewinds.
	ReasonRewound Reason = "rewound"
	// ReasonInventoryChanged: another writer changed the inventory while
	// this run applied (two replicas on one app during a re-shard).
	ReasonInventoryChanged Reason = "inventory-changed"
)

// Guards that spare one object.
const (
	// ReasonProtected: a Namespace, CustomResourceDefinition or
	// PersistentVolumeClaim without syncd.dev/prune: allow.
	ReasonProtected Reason = "protected"
	// ReasonReserved: one of syncd's own objects (Reserved.SyncdOwn);
	// prune never deletes or orphans it.
	ReasonReserved Reason = "reserved"
	// ReasonUnowned: no manager of the app owns a field of the object any
	// more.
	ReasonUnowned Reason = "unowned"
	// ReasonNotMember: the object no longer carries the app's part-of
	// label.
	ReasonNotMember Reason = "not-member"
	// ReasonChanged: the object changed between the read and the delete
	// (the delete's preconditions failed); it is retried next time.
	ReasonChanged Reason = "changed"
	// ReasonError: the delete or orphaning request failed.
	ReasonError Reason = "error"
)

// Refusal says why a whole prune did not run.
type Refusal struct {
	Reason  Reason
	Message string
}

// Spared is an object that left Git but that prune did not delete.
type Spared struct {
	Object  planner.ObjectRef
	Reason  Reason
	Message string
}

// String returns "object: message".
func (s Spared) String() string { return s.Object.String() + ": " + s.Message }

// Kept is an object prune left in the cluster and dropped from the
// inventory because it asks never to be pruned.
type Kept struct {
	Object planner.ObjectRef
	// Directive is the annotation (or label) that says so, as the live
	// object carries it.
	Directive directive.Directive
}

// String returns "object: kept in the cluster, dropped from the
// inventory (directive)".
func (k Kept) String() string {
	return fmt.Sprintf("%s: left Git; kept in the cluster as it is and dropped from the inventory (%s)", k.Object, k.Directive)
}

// Report is what one prune did.
type Report struct {
	App    string
	DryRun bool
	// Refused is set when no object was pruned because a guard refused
	// the whole prune; the objects that left Git are listed in Spared.
	Refused *Refusal
	// Deleted and Orphaned are the objects removed from the app;
	// Orphaned ones stay in the cluster without syncd's label and
	// managers. In a dry run they are what would happen.
	Deleted, Orphaned []planner.ObjectRef
	// Kept are objects that left Git whose live copy says never to prune
	// them (prune: disabled or reconcile: disabled, syncd's or Flux's
	// spelling): they are dropped from the inventory and left in the
	// cluster exactly as they are, the part-of label, the managers
	// annotation and syncd's field ownership included, as Flux leaves
	// them. Not pruned: no delete, no patch. In a dry run they are what
	// would happen.
	Kept []Kept
	// Gone are inventory members already absent from the cluster.
	Gone []planner.ObjectRef
	// Spared are objects that left Git and stay, with the reason; they
	// stay in the inventory and are retried on the next run.
	Spared []Spared
	// InventoryWritten tells whether the parent was written this run.
	InventoryWritten bool
}

// String summarises the report in one line.
func (r *Report) String() string {
	if r == nil {
		return "prune: not run"
	}
	var parts []string
	if r.Refused != nil {
		parts = append(parts, "refused: "+r.Refused.Message)
	}
	verb := ""
	if r.DryRun {
		verb = "would be "
	}
	if n := len(r.Deleted); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %sdeleted", n, verb))
	}
	if n := len(r.Orphaned); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %sorphaned", n, verb))
	}
	if n := len(r.Kept); n > 0 {
		parts = append(parts, fmt.Sprintf("%d %skept (prune disabled)", n, verb))
	}
	if n := len(r.Gone); n > 0 {
		parts = append(parts, fmt.Sprintf("%d already gone", n))
	}
	if n := len(r.Spared); n > 0 && r.Refused == nil {
		parts = append(parts, fmt.Sprintf("%d spared", n))
	}
	if len(parts) == 0 {
		return "prune: nothing to do"
	}
	return "prune: " + strings.Join(parts, "; ")
}

func refusalMessage(reason Reason, cause error) string {
	switch reason {
	case ReasonSourceFailed:
		return fmt.Sprintf("not pruning: the source failed, so what Git holds is unknown: %v", cause)
	case ReasonRenderFailed:
		return fmt.Sprintf("not pruning: the manifests did not render, so what Git holds is unknown: %v", cause)
	case ReasonClusterUnreachable:
		return fmt.Sprintf("not pruning: the app's cluster did not answer: %v", cause)
	}
	return fmt.Sprintf("not pruning: %v", cause)
}
