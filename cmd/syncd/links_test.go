package main

import (
	"os/exec"
	"slices"
	"strings"
	"testing"
)

// TestSyncdDoesNotLinkSOPS: syncd stays resident, so it does not link
// the SOPS library (about 29 MB of binary with its key services, 20 MiB
// of resident memory at start); renders, which decrypt, run in
// syncd-render, which does. A package of syncd importing package
// sopsfile would put it back.
func TestSyncdDoesNotLinkSOPS(t *testing.T) {
	syncd := deps(t, ".")
	if !slices.Contains(syncd, "syncd.dev/syncd/internal/decrypt") {
		t.Fatalf("go list -deps of syncd lacks internal/decrypt (it parses keys): the list is not syncd's\n%s", strings.Join(syncd, "\n"))
	}
	for _, p := range syncd {
		if strings.HasPrefix(p, "github.com/getsops/") || p == "syncd.dev/syncd/internal/decrypt/sopsfile" {
			t.Errorf("syncd links %s: only syncd-render may (import sopsfile there, not in a package syncd imports)", p)
		}
	}
	if render := deps(t, "../syncd-render"); !slices.Contains(render, "syncd.dev/syncd/internal/decrypt/sopsfile") {
		t.Error("syncd-render does not link internal/decrypt/sopsfile: its renders could not read SOPS files")
	}
}

// deps are the packages go list -deps gives for the package in dir.
func deps(t *testing.T, dir string) []string {
	t.Helper()
	cmd := exec.Command("go", "list", "-deps", ".")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("go list -deps in %s: %v", dir, err)
	}
	return strings.Fields(string(out))
}
