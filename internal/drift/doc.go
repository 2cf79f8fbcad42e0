// Package drift compares what an app's plan declares with the live
// objects, field by field, and names the culprit of every difference.
//
// Ownership comes from the live objects' managedFields, decoded with
// package ownership (structured-merge-diff field sets), against the field sets
// the planner computed for each of syncd's managers (planner.Slice.Fields).
// Only the leaf fields Git declares are checked; structural parents are
// never reported, and neither is any field syncd did not declare (another
// manager's own keys, fields the server defaulted). Each finding has a
// Class:
//
//   - taken-over: no syncd manager owns the field any more; the owners
//     (manager, Apply/Update, subresource, time) and both values are given.
//   - shared: syncd owns it together with another manager.
//   - value-drift: only syncd owns it, but the live value is neither Git's
//     value (numbers by value, resource quantities by amount, maps on the
//     keys Git declares, a zero value the server omits counts as absent)
//     nor what the API server stores for it: Normalize asks the server
//     with a forced dry-run apply of the slice (Options.Normalized), only
//     for slices the first comparison finds different.
//   - flapping: the owner keeps flipping between syncd and another forcing
//     manager (FlapDetector).
//   - deleted, unmanaged: object-level.
//   - yielded, handoff-pending: information, not drift. A field is
//     yielded when Options.Yield (the app's conflict policy) says yield to
//     its current owner, or the caller listed it in Options.Yielded.
//
// Detect is pure (the one-shot check, tests); Watcher recomputes findings
// from watch events, debounced per object, and publishes new and resolved
// findings. With a LabelSelector it watches only the app's members; a
// member that lost the label is reported as that label taken over, not as
// deleted. Pause, Applied and SetPlan keep the caller's own apply from
// being judged against the previous plan or a lagging cache. Report
// renders text, Markdown or JSON (a stable, documented shape). Values the
// rules of package redact hide (a Secret's data and stringData, any
// object's last-applied-configuration annotation, the app's sensitive
// fields in Options.Sensitive) are always replaced by redact.Marker.
//
// The package never writes to the cluster (the only requests besides
// reads are Normalize's and the Watcher's dry-run applies, which persist
// nothing): whether drift is corrected is the caller's decision (drift
// mode "detect" vs "correct").
//
// Not guaranteed: findings are as good as the field sets. Where the
// planner's schema differs from the server's (a custom kind whose CRD was
// not in the render is typed with a deduced schema) ownership is matched
// leniently (an atomic ancestor or finer children count as owning) but may
// still be reported wrongly. A field removed out of band is reported as
// taken-over with no owner: the API server does not record who removed
// it. A mutating webhook that changes a field during syncd's own apply
// leaves syncd as the owner; when it makes the same change in the dry run
// that is what the server stores, not drift; otherwise it shows as
// value-drift, not as a take-over, and the webhook is not named. When the
// dry run fails (no patch permission, an immutable field changed in Git)
// the values are compared with Git's text, with a warning. The Watcher folds events within
// the debounce into one recomputation, so a take-over undone within it may
// never be published (the flap detector still sees every event). An
// object outside a label-selected watch is read when it is recomputed, but
// its later changes are not seen until it is labelled again or the plan is
// set again. Watches are reconnected by client-go's informers; events lost
// while disconnected are caught up by the relist, not replayed.
package drift
