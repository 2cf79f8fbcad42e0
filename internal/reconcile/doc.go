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
//
// The daemon (Daemon) applies an app only once each app of its dependsOn
// reconciled its current revision successfully (depends.go), and wakes
// the dependents when a dependency's reconcile ends. It does not see the
// applies of apps another shard runs, so dependsOn across shards holds the
// dependent (reason other-shard), and it remembers what a dependency
// applied only in memory: after a restart a dependent waits for its
// dependency's first reconcile.
package reconcile
