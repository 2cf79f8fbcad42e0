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
// Reconciler is the per-app reconcile the two drivers (package daemon
// for syncd.yaml, package controller for App objects) call: one app at
// one revision, rendered, applied (or only watched, in drift mode
// detect), pruned, its drift watcher pointed at what was applied, and an
// Outcome returned. It schedules nothing, retries nothing and reports
// nothing beyond its Outcome and its log; the drivers do. What they
// report a reconcile with is decided here once: ReasonOf maps an Outcome
// (the stage it failed in, its Result, a failed prune) to the reason of
// both drivers' Events and of the App's Ready condition, in the App's
// vocabulary (v1alpha1.Reason). It is the one
// library package besides the drivers that logs (with the Logger it is
// given); the stages return results and errors.
//
// It guarantees that a failed source or a failed render stops the run
// before anything is sent to the cluster, and that a failed render
// prunes nothing. It does not guarantee that two replicas never
// reconcile one app at once: that is the job of the leader election
// (package leader) that syncd run holds around the drivers.
//
// Runner.Target is the one place that decides which cluster an app talks
// to: syncd's own for an app without a cluster section, else a Target
// that Targets made from the app's kubeconfig (a file, or a Secret in
// syncd's namespace; an App object's is in its own namespace, read as
// its service account: Targets.ForAppObject; loaded with clientcmd)
// with that cluster's clients, RESTMapper, discovery, impersonation and
// inventory; the applier, the prune, the preview, the drift reads and
// the app's drift watcher all take their clients from it. A remote cluster is asked for its version
// before each run: one that does not answer fails only its apps
// (UnreachableError), before anything is sent or pruned. It does not
// guarantee that a cluster answering that probe stays up for the run: the
// requests that then fail fail the apply, which never prunes.
package reconcile
