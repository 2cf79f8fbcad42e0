package repos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"syncd.dev/syncd/internal/testenv"
)

var (
	env *testenv.Env
	// bin is the syncd binary built for this package's tests.
	bin string
)

// TestMain builds syncd and starts the control plane with every default
// controller, so the objects live the way they do in a cluster.
func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "syncd-repos-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	bin = filepath.Join(dir, "syncd")
	build := exec.Command("go", "build", "-o", dir+"/", "./cmd/syncd", "./cmd/syncd-render")
	build.Dir = "../.."
	if out, err := build.CombinedOutput(); err != nil {
		fmt.Fprintf(os.Stderr, "go build ./cmd/syncd ./cmd/syncd-render: %v\n%s", err, out)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	e, err := testenv.Start(ctx, testenv.Options{ControllerManager: true})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stop:", err)
	}
	return code
}
