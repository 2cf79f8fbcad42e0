package reconcile

import (
	"errors"
	"testing"
)

// TestAtRevision: a failure is prefixed with the revision it happened at,
// and a failure before any revision (a source that never fetched) is not
// prefixed with an empty one ("revision : …", as Events once read).
func TestAtRevision(t *testing.T) {
	base := errors.New("fetch: repository not found")
	if got := AtRevision("1a2b3c4d5e6f", base); got.Error() != "revision 1a2b3c4d5e6f: fetch: repository not found" || !errors.Is(got, base) {
		t.Errorf("AtRevision with a revision = %q (unwraps to the error: %v)", got, errors.Is(got, base))
	}
	if got := AtRevision("", base); got != base {
		t.Errorf("AtRevision without a revision = %q, want the error as it is", got)
	}
}
