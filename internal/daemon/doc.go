// Package daemon is the syncd.yaml driver of the per-app reconcile
// (package reconcile), as package controller is the App object's: it
// decides when each app is reconciled and reports how each reconcile
// ended. A Daemon schedules each source's polls (source.Scheduler, or a
// push webhook's Trigger), hands every app of its shard the revision
// its source resolved, and runs one loop per app that calls the app's
// reconcile.Reconciler and retries a failed reconcile with capped
// exponential backoff. It reloads the config when the file changes (each
// valid config is a new generation of loops; an invalid one is rejected
// and the running one stays). It reports each Outcome in /status
// (AppStatus), the Prometheus metrics (Metrics), Kubernetes Events on the
// app's inventory parent, alerts (drift, conflicts, handoffs, prunes,
// rewinds, errors and their resolutions) and the log. Without a config
// file (an empty Options.ConfigPath) it runs no apps, polls nothing and
// is ready at once: syncd run then runs only the App controller beside
// it. It is a library package that logs (with the Logger it is given);
// the stages return results and errors.
//
// It guarantees that a failed poll keeps the last good revision in force
// (nothing is applied or pruned; each app of the source shows the error),
// and that an app's revision is held on disk until its loop reconciled
// it or a newer one replaced it. It does not guarantee that two daemons
// never reconcile one app at once: that is the job of the leader
// election (package leader).
//
// It applies an app only once each app of its dependsOn reconciled its
// current revision successfully (depends.go), and wakes the dependents
// when a dependency's reconcile ends. It does not see the applies of apps
// another shard runs, so dependsOn across shards holds the dependent
// (reason other-shard), and it remembers what a dependency applied only
// in memory: after a restart a dependent waits for its dependency's
// first reconcile.
package daemon
