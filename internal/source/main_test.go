package source

import (
	"fmt"
	"os"
	"testing"

	"syncd.dev/syncd/internal/egress"
)

// TestMain installs the network block syncd's main installs, so every
// source (Git over HTTP, Helm repositories, OCI registries) is tested in
// a process like the one users run: a client that fell back on
// http.DefaultTransport, or type-asserted it, fails here as it fails in
// the built binary.
func TestMain(m *testing.M) {
	if _, err := egress.Forbid(); err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	os.Exit(m.Run())
}
