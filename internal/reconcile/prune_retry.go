package reconcile

import (
	"fmt"

	"syncd.dev/syncd/internal/inventory"
)

// pruneIncomplete returns an error when the prune of rep spared objects
// that left Git because their delete or orphan request failed (reason
// error: a connection refused or reset, a timeout, a 5xx). Those objects
// stay in the inventory and a later run removes them; the error makes
// that later run come with the app's retry backoff instead of at the next
// poll, which may be an hour away, and keeps the app from reporting ok
// while objects that left Git are still in the cluster. Guards that
// would refuse again (budget, forbidden, protected, ...) are not
// retried: they need a person.
func pruneIncomplete(rep *inventory.Report) error {
	if rep == nil || rep.DryRun {
		return nil
	}
	var failed []inventory.Spared
	for _, s := range rep.Spared {
		if s.Reason == inventory.ReasonError {
			failed = append(failed, s)
		}
	}
	if len(failed) == 0 {
		return nil
	}
	return pruneFailed(fmt.Errorf("prune incomplete: %d object(s) that left Git could not be removed and are retried; first: %s", len(failed), failed[0]))
}
