package e2e

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

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

var (
	env *testenv.Env
	bin string // the syncd binary TestMain built
)

// TestMain builds syncd as the Dockerfile does, starts the control plane
// with a kube-controller-manager, installs the CRDs and runs the
// journeys.
func TestMain(m *testing.M) { os.Exit(run(m)) }

func run(m *testing.M) int {
	dir, err := os.MkdirTemp("", "syncd-e2e-")
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer os.RemoveAll(dir)
	if bin, err = buildRelease(dir); err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	e, err := testenv.Start(ctx, testenv.Options{ControllerManager: true})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer func() {
		if err := e.Stop(); err != nil {
			fmt.Fprintln(os.Stderr, "testenv: stop:", err)
		}
	}()
	env = e
	if out, err := kubectl("apply", "-k", filepath.Join(repoRoot, "manifests", "crds")); err != nil {
		fmt.Fprintf(os.Stderr, "kubectl apply -k manifests/crds: %v\n%s", err, out)
		return 1
	}
	return m.Run()
}

// buildRelease builds syncd into dir with hack/build.sh, the line the
// Dockerfile runs.
func buildRelease(dir string) (string, error) {
	out := filepath.Join(dir, "syncd")
	abs, err := filepath.Abs(out)
	if err != nil {
		return "", err
	}
	cmd := exec.Command("./hack/build.sh", abs)
	cmd.Dir = repoRoot
	cmd.Env = append(os.Environ(), "VERSION=e2e")
	if b, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("hack/build.sh: %v\n%s", err, b)
	}
	return abs, nil
}

// kubectl runs the control plane's kubectl as the admin.
func kubectl(args ...string) ([]byte, error) {
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append([]string{"--kubeconfig", env.Kubeconfig}, args...)...)
	return cmd.CombinedOutput()
}
