package applier

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/directive"
	"syncd.dev/syncd/internal/planner"
)

// SkipReason says why the applier left an object alone on purpose (an
// Excluded change): the object asks for it with an annotation.
type SkipReason string

// Skip reasons.
const (
	// ReconcileDisabled: the object carries syncd.dev/reconcile: disabled
	// (or kustomize.toolkit.fluxcd.io/reconcile: disabled), in Git or on
	// the live object: it is neither created nor updated.
	ReconcileDisabled SkipReason = "reconcile-disabled"
	// SSAIgnore: the object carries syncd.dev/ssa: Ignore (or Flux's
	// spelling), in Git or on the live object: it is neither created nor
	// updated.
	SSAIgnore SkipReason = "ssa-ignore"
	// SSAIfNotPresent: Git declares syncd.dev/ssa: IfNotPresent (or
	// Flux's spelling) and the object exists: it was created when it was
	// missing and is never updated.
	SSAIfNotPresent SkipReason = "ssa-if-not-present"
)

// Skip is an Excluded change's reason and the directive behind it.
type Skip struct {
	Reason SkipReason
	// Directive is the annotation (or label) as the object carries it.
	Directive directive.Directive
	// Live is set when the directive was read from the live object rather
	// than from Git.
	Live bool
}

// String says why, for the apply output: "reconcile disabled
// (kustomize.toolkit.fluxcd.io/reconcile: disabled)".
func (s Skip) String() string {
	where := ""
	if s.Live {
		where = " on the live object"
	}
	switch s.Reason {
	case ReconcileDisabled:
		return fmt.Sprintf("reconcile disabled (%s%s)", s.Directive, where)
	case SSAIgnore:
		return fmt.Sprintf("ignored (%s%s)", s.Directive, where)
	case SSAIfNotPresent:
		return fmt.Sprintf("exists, created only when missing (%s)", s.Directive)
	}
	return string(s.Reason)
}

// skipBeforeRead decides from Git alone whether an object is left alone:
// it disables its reconciliation or says ssa: Ignore. Such an object is
// not even read.
func skipBeforeRead(obj *planner.Object) *Skip {
	return excluded(directive.Of(obj.Desired), false)
}

// skipReason decides whether an object that exists (live; nil when only
// known to be as syncd left it) is left alone:
// the live object disables its reconciliation or says ssa: Ignore (as
// Flux reads these from the object in the cluster), or Git says ssa:
// IfNotPresent.
func skipReason(obj *planner.Object, live *unstructured.Unstructured) *Skip {
	if live != nil {
		if s := excluded(directive.Of(live), true); s != nil {
			return s
		}
	}
	d := directive.Of(obj.Desired)
	if d.Mode() == directive.SSAIfNotPresent {
		return &Skip{Reason: SSAIfNotPresent, Directive: d.SSA}
	}
	return nil
}

// excluded returns the skip that d's reconcile or ssa: Ignore directive
// asks for, nil when none.
func excluded(d directive.Set, live bool) *Skip {
	switch {
	case d.ReconcileDisabled.Key != "":
		return &Skip{Reason: ReconcileDisabled, Directive: d.ReconcileDisabled, Live: live}
	case d.Mode() == directive.SSAIgnore:
		return &Skip{Reason: SSAIgnore, Directive: d.SSA, Live: live}
	}
	return nil
}

// exclude marks every slice of the target Excluded for s: nothing is
// written, nothing is left to do.
func (t *target) exclude(s *Skip) {
	for i := range t.changes {
		t.changes[i].Action, t.changes[i].Skip, t.changes[i].ResourceVersion = Excluded, s, ""
	}
	t.done = true
}
