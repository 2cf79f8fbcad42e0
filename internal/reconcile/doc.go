// Package reconcile wires syncd's stages together for one app: source
// (resolve and check out the Git revision) → planner (render, validate,
// split) → applier (apply under the conflict policy). Runner.Preview runs
// the same render, plan, refusal of syncd's own objects and identity as
// Runner.Apply, dry-runs what the inventory does not show unchanged
// through a memoising client (dryrun.go) and reports it as a
// preview.Report, prune preview included (syncd plan). The CLI commands
// and the daemon call it; the stages themselves never import each other
// backwards.
//
// It guarantees that a failed source or a failed render stops the run
// before anything is sent to the cluster. It does not schedule, retry or
// log: the daemon does that.
package reconcile
