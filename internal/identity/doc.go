// Package identity says whom syncd's requests for an app's objects run
// as: syncd's own identity, or, for an app with serviceAccountName, that
// service account by impersonation. Every client that touches an app's
// objects — applies, dry runs, prune deletes and orphan patches, health,
// drift and no-op-skip reads and watches — is built from Config, so a
// tenant can never get syncd to do what its own RBAC forbids.
//
// It does not cover syncd's own bookkeeping: the inventory parent
// Secrets and the leader Lease are always written as syncd. It does not
// check that the service account exists or has any permission; the API
// server answers Forbidden for what it may not do.
package identity
