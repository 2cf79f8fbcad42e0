package drift

import (
	"syncd.dev/syncd/internal/directive"
)

// exempt reports whether the object asks not to be checked for drift, as
// the applier leaves it alone: reconcile: disabled or ssa: Ignore, in Git
// (git: its directives there) or on the live object, or ssa: IfNotPresent
// in Git on an object that exists (it is created when missing and never
// updated, so only its deletion is drift). live is nil when the object
// does not exist.
func exempt(git directive.Set, live *liveCopy) bool {
	if leftAlone(git) {
		return true
	}
	if live == nil {
		return false
	}
	return leftAlone(directive.Of(live.metadata())) || git.Mode() == directive.SSAIfNotPresent
}

// leftAlone reports whether d disables the object's reconciliation.
func leftAlone(d directive.Set) bool {
	return d.ReconcileDisabled.Key != "" || d.Mode() == directive.SSAIgnore
}
