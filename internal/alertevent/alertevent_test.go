package alertevent

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestAll pins the list: config errors and docs/config.md name the events
// in this order, and a caller changing the returned slice changes no
// later answer.
func TestAll(t *testing.T) {
	want := []string{"drift", "overlap", "conflict", "handoff", "prune", "error", "sync"}
	got := All()
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("All() (-want +got):\n%s", diff)
	}
	got[0] = "changed"
	if diff := cmp.Diff(want, All()); diff != "" {
		t.Errorf("All() after a caller changed its result (-want +got):\n%s", diff)
	}
}
