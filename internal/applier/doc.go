// Package applier sends a planner.Plan to the API server with Server-Side
// Apply: one apply request per manager slice, in the plan's stage order,
// never forcing unless the app's conflict policy says so, and reports each
// outcome in a ChangeSet.
//
// It guarantees that it never sends an object it read from the cluster and
// never sends metadata.managedFields: what it applies is the planner's slice,
// built from Git. A field conflict (HTTP 409 with FieldManagerConflict
// causes) is returned as Conflicts naming each field and its current
// manager; resourceVersion conflicts (also 409) are retried.
//
// It does not guarantee atomicity across objects: a failure part-way leaves
// earlier objects applied, and a re-run converges. It does not prune; that
// is the inventory's job, after a fully successful apply.
package applier
