// Package inventory records, per app, which objects syncd applied, in a
// form kubectl understands (an ApplySet, KEP-3659), prunes the objects that
// left Git behind a set of guards, and makes reconciles in which nothing
// changed cost no request.
//
// Each app has one parent Secret, "syncd-applyset-<app>" in syncd's own
// namespace, labelled applyset.kubernetes.io/id=<ID> and annotated with
// the tooling ("syncd/<version>"), the members' group-kinds and their
// namespaces. Its data holds the inventory proper, gzip-compressed JSON:
// per member its identity, stage, whether syncd created or adopted it, the
// hash of each manager's last applied slice, the fingerprint of that
// manager's managedFields entries (ownership.Fingerprint) and the
// resourceVersion right after that apply. An inventory larger than DefaultChunkSize compressed
// (some 17,000 members) is cut into chunk Secrets owned by the parent,
// which then holds only their index; see store.save for the write order
// that keeps a complete inventory named at every moment. Members carry
// applyset.kubernetes.io/part-of=<ID>, applied by the app's default
// manager (ApplyOptions.Labels).
//
// A reconcile is Manager.Begin, the applier with Run.Hooks, then
// Run.Finish. Begin records every object the plan may create before it is
// applied, so an interrupted run never loses track of one. Hooks makes the
// applier read objects' metadata from the live cache (package livecache:
// one informer per resource, namespace and app, label-selected by part-of,
// started once per process, shared with the app's drift watcher)
// and skip an object whose slices' hashes are those recorded and whose
// managers' managedFields entries are as the last apply left them (or,
// for a member recorded without fingerprints, whose resourceVersion is the
// recorded one): writes by others that leave syncd's fields alone
// (status, another manager's metadata, another app applying the same
// values) cost no request. Finish prunes, then writes the new member set, but only
// when something changed.
//
// An app with an Owner (the App controller's "App <namespace>/<name>")
// records it on its parent (syncd.dev/owner); an app of the same name
// with another Owner is refused (OwnerError) by Begin, Unchanged and
// PreviewPrune while the inventory lists members, so two apps whose
// names collide never write or prune each other's (owner.go).
//
// Guarantees: nothing is deleted unless the apply of the whole plan
// succeeded, the plan is not empty (or the app allows it), the deletions
// stay within the budget, and the object still carries the app's part-of
// label and still has a field owned by one of the app's managers, read just
// before the delete, which is preconditioned on that read's UID and
// resourceVersion. Namespaces, CRDs and PVCs need syncd.dev/prune: allow.
// Adopted objects are orphaned (label, managers annotation and the app's
// managedFields entries removed; no value changes) unless the app says
// adopted: delete.
//
// Not guaranteed: the watch cache may lag the API server. A lagging cache
// costs at most one extra apply (syncd's own write not yet seen) or delays
// noticing an out-of-band change by one reconcile (the write is not yet
// seen); it never causes a delete, which always reads the object first.
// Two syncd processes managing the same app are not fenced against each
// other. Objects of a kind whose CRD was deleted are counted as gone.
// Pruning does not wait for deleted objects' finalizers.
package inventory
