package inventory

import "syncd.dev/syncd/internal/identity"

// App is what the inventory needs to know about one app: whom its member
// reads and prunes run as, which field managers are its own, and how far
// prune may go.
type App struct {
	// Name names the app's parent Secret and its part-of label.
	Name string
	// Tenant is whom the app's members are read, watched, deleted and
	// patched as.
	Tenant identity.Tenant
	// Managers are the app's field managers: the default one first, then
	// the split managers.
	Managers []string
	// Prune deletes (or orphans) members that left Git; false spares them.
	Prune bool
	// PruneBudget is the share of the app's objects, in percent, one
	// prune may delete.
	PruneBudget int
	// AllowEmpty lets a render with no objects prune every member.
	AllowEmpty bool
	// DeleteAdopted deletes adopted members when they leave Git instead of
	// orphaning them.
	DeleteAdopted bool
	// InstallsSyncd lets the app hold objects that are syncd's own
	// (Reserved): it is the app that installs syncd.
	InstallsSyncd bool
	// Owner is whom the app is, recorded in its parent Secret
	// (AnnotationOwner), e.g. "App team-b/web": an inventory that records
	// another owner and holds members is refused (OwnerError) before
	// anything is applied, written or pruned. Empty (the config file's
	// apps): not checked, and the record is kept as it is.
	Owner string
	// ConflictPolicy is a digest of the app's conflict policy. A yield
	// recorded under another policy is forgotten when the inventory is
	// read (forgetStaleYields): the policy now in force may decide the
	// conflict otherwise, so the object is applied again.
	ConflictPolicy string
}
