package reconcile

import (
	"fmt"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/inventory"
)

// Result is how one reconcile of an app ended. The drivers report it:
// the file daemon in /status (which adds states of its own, such as an
// app waiting for its first reconcile), the App controller as the Ready
// condition's reason.
type Result string

// Results of a reconcile.
const (
	// ResultOK: applied (or, in drift mode detect, watched) in full.
	ResultOK Result = "ok"
	// ResultConflicts: objects were blocked by field conflicts.
	ResultConflicts Result = "conflicts"
	// ResultFailed: the app could not be rendered, set up (drift
	// settings, normalizer) or applied, its prune was incomplete, or its
	// source failed before its first reconcile.
	ResultFailed Result = "failed"
	// ResultUnhealthy: objects were not healthy when the wait ended.
	ResultUnhealthy Result = "unhealthy"
)

// Stage is the stage a reconcile failed in, the stage label of
// syncd_reconcile_errors_total.
type Stage string

// Stages of a failed reconcile.
const (
	// StageSource: the source could not be polled.
	StageSource Stage = "source"
	// StageRender: the app could not be rendered or planned.
	StageRender Stage = "render"
	// StageApply: objects failed, conflicted or were unhealthy, or the
	// prune did not complete.
	StageApply Stage = "apply"
	// StageCluster: the app's remote cluster did not answer.
	StageCluster Stage = "cluster"
)

// stageOf returns the stage a run refused before its apply failed in.
func stageOf(reason inventory.Reason) Stage {
	switch reason {
	case inventory.ReasonSourceFailed:
		return StageSource
	case inventory.ReasonClusterUnreachable:
		return StageCluster
	}
	return StageRender
}

// ResultOf is how an apply of a rendered app ended, as one Result and the
// error a user sees: the apply's own error, else the first failed,
// conflicting or unhealthy object, else an incomplete prune. The file
// daemon and the App controller both report through it.
func ResultOf(rendered *Rendered, cs *applier.ChangeSet, err error) (Result, error) {
	switch {
	case err != nil:
		return ResultFailed, err
	case cs == nil:
		return ResultOK, nil
	case len(cs.Failures()) > 0:
		return ResultFailed, fmt.Errorf("%d object(s) failed: %w", len(cs.Failures()), cs.Failures()[0].Err)
	case len(cs.Conflicts()) > 0:
		return ResultConflicts, fmt.Errorf("%d object(s) blocked by field conflicts: %w", len(cs.Conflicts()), cs.Conflicts()[0].Err)
	case len(cs.Unhealthy()) > 0:
		u := cs.Unhealthy()[0]
		return ResultUnhealthy, fmt.Errorf("%d object(s) not healthy when the wait ended; first: %s %s: %s", len(cs.Unhealthy()), u.Object, u.Health, u.HealthMessage)
	case rendered != nil && pruneIncomplete(rendered.Prune) != nil:
		return ResultFailed, pruneIncomplete(rendered.Prune)
	}
	return ResultOK, nil
}

// SyncedMessage is the message of the Synced Event both drivers record
// after an apply the API server wrote something for: the revision, short
// as the caller prints it, and what was written (applier.Writes:
// "revision 1a2b3c4d5e6f applied: 0 created, 0 configured, 1 forced").
func SyncedMessage(short string, cs *applier.ChangeSet) string {
	return fmt.Sprintf("revision %s applied: %s", short, cs.Writes())
}
