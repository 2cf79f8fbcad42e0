// Package applier sends a planner.Plan to the API server with Server-Side
// Apply: one apply request per manager slice, in the plan's stage order,
// never forcing unless the app's conflict policy says so, and reports each
// outcome in a ChangeSet.
//
// It guarantees that it never applies an object it read from the cluster
// and never puts metadata.managedFields in an apply request: what it applies
// is the planner's slice, built from Git. The two exceptions are narrow and
// named: a handoff hold applies the live value of exactly the fields it
// holds (as "<manager>-handoff"), and the takeover of fields the app's
// apply shares with a legacy manager (client-side kubectl apply,
// before-first-apply, the managers of apps[].migrate) rewrites
// managedFields in a JSON patch guarded by the resourceVersion. The
// takeover runs after the apply and moves only what the apply shares,
// which the API server does only for equal values: a field a legacy
// manager owns with another value is a conflict for the Policy (or, with
// migrate mode force, taken), never changed silently.
//
// A field conflict (HTTP 409 with FieldManagerConflict causes) is returned
// as Conflicts naming each field and its current manager and decided per
// field by the Policy; conflicts with the app's own managers (renamed,
// split, handoff) are always forced. A conflict over a field whose value
// the API server would store exactly as it is now (a forced dry run says;
// a zero value it omits, a default it fills in) is not the Policy's: the
// field is taken without changing its value (Resolution.SameValue), or left
// to another app that declares it (Resolution.SameValueLeft). resourceVersion conflicts (also 409)
// are retried. Fields moving between the app's managers are first shared,
// then released, so no value changes on the way; fields a manager drops
// that the server would reset to a default are held by "<manager>-handoff"
// until another manager owns them. A slice is configured only when the API
// server wrote for its request: the request carries the resourceVersion
// the object was read at as a precondition, so a new resourceVersion in
// the response is its own write, and writes by controllers to the same
// object (status) do not make an unchanged slice look configured.
// Change.Changed names what the write changed, as paths, never values.
//
// What an object's requests are is decided first, as data: moves.go plans
// the steps (whole, share, hold, exact, release, takeover, let-go) from
// field sets alone, and update.go and create.go send them; a dry-run
// Applier is a sender that sends dry runs and stops where a step needs an
// earlier one's write. resolve.go decides conflicts by policy,
// handoff.go holds fields, outcome.go tells what a write changed and
// recreate.go handles immutable fields.
//
// Objects are applied in stages (CRDs, namespaces, other cluster-scoped
// objects, namespaced objects). Before the first write of a stage, every
// object of it that will be written is dry-run (force, as the default
// manager, all its slices' fields): when the API server refuses one
// (validation, admission, RBAC, a missing namespace) or an object cannot
// be mapped or read, nothing of the stage or of the later stages is
// written, and each such object fails with a StageRefusedError naming it
// and the server's reason. Each stage is validated just before it is
// written, so objects that need an earlier stage's namespace or CRD are
// no false refusal. ApplyOptions.SkipValidation turns this off. With
// ApplyOptions.Wait, a stage's objects (unchanged ones too) are waited for
// with kstatus after the stage's writes, once for the whole stage, up to
// the app's timeout from the end of the writes.
//
// It does not guarantee atomicity across objects beyond that: a dry run
// accepted can still be followed by a refused write (another writer, a
// changed admission policy, a conflict the policy fails), and a failure or
// cancellation part-way through a stage's writes leaves earlier objects
// applied (fields of an object being split or moved are shared or held,
// never ownerless); a re-run converges. Within one object, a conflict the
// policy fails is found by dry runs before any write. It does not prune;
// that is the inventory's job, after a fully successful apply.
// Recreate (ApplyOptions.Recreate) deletes in the foreground and so needs
// the cluster's garbage collector.
//
// ApplyOptions.Progress, when set, is told as each stage starts and ends
// and as each object's requests are sent, so a command line can show how
// far a long apply or preview is; it only observes the run.
package applier
