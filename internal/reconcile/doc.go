// Package reconcile wires syncd's stages together for one app: source
// (resolve and check out the Git revision) → planner (render, validate,
// split) → applier (apply under the conflict policy) → inventory (prune
// and record the members) → drift (watch what was applied). Runner.Preview
// runs the same render, plan, refusal of syncd's own objects and identity
// as Runner.Apply, dry-runs what the inventory does not show unchanged
// through a memoising client (dryrun.go) and reports it as a
// preview.Report, prune preview included (syncd plan). The CLI commands
// call its Runner for one run; the stages themselves never import each
// other backwards.
//
// It also holds the daemon (Daemon): it schedules each source's polls,
// reconciles every app of its shard on each new revision, retries a failed
// reconcile with capped exponential backoff, reloads the config when the
// file changes, and logs, raises alerts, Events and metrics for what it
// did. Without a config file (an empty DaemonOptions.ConfigPath) it runs
// no apps, polls nothing and is ready at once: syncd run then runs only
// the App controller (package controller) beside it. It is the one
// library package that logs (with the Logger it is given); the stages
// return results and errors.
//
// It guarantees that a failed source or a failed render stops the run
// before anything is sent to the cluster, and that a failed poll keeps
// the last good revision in force (nothing is applied or pruned). It does
// not guarantee that two daemons never reconcile one app at once: that is
// the job of the leader election in cmd/syncd.
//
// The daemon (Daemon) applies an app only once each app of its dependsOn
// reconciled its current revision successfully (depends.go), and wakes
// the dependents when a dependency's reconcile ends. It does not see the
// applies of apps another shard runs, so dependsOn across shards holds the
// dependent (reason other-shard), and it remembers what a dependency
// applied only in memory: after a restart a dependent waits for its
// dependency's first reconcile.//
// Runner.Target is the one place that decides which cluster an app talks
// to: syncd's own for an app without a cluster section, else a Target
// that Targets made from the app's kubeconfig (a file, or a Secret in
// syncd's namespace, loaded with clientcmd) with that cluster's clients,
// RESTMapper, discovery, impersonation and inventory; the applier, the
// prune, the preview, the drift reads and the daemon's drift watcher all
// take their clients from it. A remote cluster is asked for its version
// before each run: one that does not answer fails only its apps
// (UnreachableError), before anything is sent or pruned. It does not
// guarantee that a cluster answering that probe stays up for the run: the
// requests that then fail fail the apply, which never prunes.
package reconcile
