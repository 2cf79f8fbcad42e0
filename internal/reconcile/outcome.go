package reconcile

import (
	"fmt"

	"syncd.dev/syncd/internal/applier"
)

// ResultOf is how an apply of a rendered app ended, as one Result and the
// error a user sees: the apply's own error, else the first failed,
// conflicting or unhealthy object, else an incomplete prune. The file
// daemon and the App controller both report through it.
func ResultOf(rendered *Rendered, cs *applier.ChangeSet, err error) (Result, error) {
	switch {
	case err != nil:
		return ResultFailed, err
	case cs == nil:
		return ResultOK, nil
	case len(cs.Failures()) > 0:
		return ResultFailed, fmt.Errorf("%d object(s) failed: %w", len(cs.Failures()), cs.Failures()[0].Err)
	case len(cs.Conflicts()) > 0:
		return ResultConflicts, fmt.Errorf("%d object(s) blocked by field conflicts: %w", len(cs.Conflicts()), cs.Conflicts()[0].Err)
	case len(cs.Unhealthy()) > 0:
		u := cs.Unhealthy()[0]
		return ResultUnhealthy, fmt.Errorf("%d object(s) not healthy when the wait ended; first: %s %s: %s", len(cs.Unhealthy()), u.Object, u.Health, u.HealthMessage)
	case rendered != nil && pruneIncomplete(rendered.Prune) != nil:
		return ResultFailed, pruneIncomplete(rendered.Prune)
	}
	return ResultOK, nil
}
