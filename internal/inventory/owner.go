package inventory

import (
	"context"
	"fmt"
)

// AnnotationOwner, on a parent Secret, records whom the inventory
// belongs to (App.Owner), e.g. "App team-b/web". Two apps whose names
// collide (the App controller's "<namespace>-<name>" of App team/b-web
// and App team-b/web) would share one parent; the one it does not
// record may neither write it nor prune from it.
const AnnotationOwner = "syncd.dev/owner"

// OwnerError says an app's inventory belongs to another app: the
// parent records Owner, the app is Claimant. Nothing was written or
// pruned.
type OwnerError struct {
	// App is the app name the two share; Parent is the parent Secret
	// ("<namespace>/<name>").
	App, Parent string
	// Owner is who the parent records; Claimant is who was refused.
	Owner, Claimant string
}

func (e *OwnerError) Error() string {
	return fmt.Sprintf("the inventory of app name %s (Secret %s) belongs to %s, and %s has the same app name: %s may not write it or prune from it; rename %s (or, if %s is gone and the objects that inventory lists are to be left alone, delete that Secret)",
		e.App, e.Parent, e.Owner, e.Claimant, e.Claimant, e.Claimant, e.Owner)
}

// loadFor reads app's inventory and refuses it (*OwnerError) when it
// records another owner and holds members: an app without Owner, an
// inventory that records none (written before owners were recorded: the
// first app to write it records itself) and an empty one are not
// refused, the last because there is nothing in it to lose. Yields the
// inventory records under another conflict policy than app's are
// forgotten (forgetStaleYields).
func (s *store) loadFor(ctx context.Context, app App) (*loaded, error) {
	l, err := s.load(ctx, app.Name)
	if err != nil {
		return nil, err
	}
	if owner := l.inv.Owner; app.Owner != "" && owner != "" && owner != app.Owner && len(l.inv.Members) > 0 {
		return nil, &OwnerError{App: app.Name, Parent: s.namespace + "/" + ParentName(app.Name), Owner: owner, Claimant: app.Owner}
	}
	forgetStaleYields(l.inv, app.ConflictPolicy)
	return l, nil
}

// owner is whom the run writes the inventory as belonging to: the app's
// Owner, else whom the inventory already records (an app without Owner
// keeps the record).
func (r *Run) owner() string {
	if r.app.Owner != "" {
		return r.app.Owner
	}
	return r.prev.inv.Owner
}
