package renderproc

import (
	"os"
	"testing"

	_ "syncd.dev/syncd/internal/decrypt/sopsfile" // this binary's render children read SOPS files
)

// TestMain makes this test binary a render child when a test's Renderer
// starts it as one, as syncd's main does.
func TestMain(m *testing.M) {
	Main()
	os.Exit(m.Run())
}
