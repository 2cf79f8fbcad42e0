package applier

import "syncd.dev/syncd/internal/planner"

// Progress is told how an Apply or a Preview advances, for a caller that
// shows it (syncd's progress line on a terminal). The applier calls it
// from its workers, concurrently: implementations must be safe for
// concurrent use and return quickly, since a worker waits for the call.
// It is told nothing about outcomes; those are in the ChangeSet.
type Progress interface {
	// StageStarted is called when the applier starts a stage, with the
	// number of the stage's objects.
	StageStarted(stage planner.Stage, objects int)
	// ObjectDone is called once per object of the stage when its
	// requests are sent (written, dry-run, refused or found unchanged).
	// A stage refused by validation (or a cancelled run) writes nothing,
	// so its objects are not reported done.
	ObjectDone(stage planner.Stage)
	// StageDone is called when the stage ends, after its CRDs were
	// established and its objects waited for (ApplyOptions.Wait),
	// whether or not every object was done.
	StageDone(stage planner.Stage)
}

// noProgress is the Progress of a run whose ApplyOptions set none.
type noProgress struct{}

func (noProgress) StageStarted(planner.Stage, int) {}
func (noProgress) ObjectDone(planner.Stage)        {}
func (noProgress) StageDone(planner.Stage)         {}

// progress returns the run's Progress, a no-op one when the options set
// none.
func (r *objectRun) progress() Progress {
	if r.ao.Progress == nil {
		return noProgress{}
	}
	return r.ao.Progress
}
