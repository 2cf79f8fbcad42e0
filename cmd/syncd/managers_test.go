package main

import (
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
	"syncd.dev/syncd/internal/inventory"
)

// TestSyncdManagersListed: every field manager syncd writes as is in
// config.SyncdManagers, the list no app may apply as, and the list names
// no other.
func TestSyncdManagersListed(t *testing.T) {
	writes := []string{controller.FieldManager, string(cliManager), inventory.StoreManager}
	var listed []string
	for m := range config.SyncdManagers {
		listed = append(listed, m)
	}
	slices.Sort(writes)
	slices.Sort(listed)
	if diff := cmp.Diff(writes, listed); diff != "" {
		t.Errorf("config.SyncdManagers (-syncd's writes +listed):\n%s", diff)
	}
}
