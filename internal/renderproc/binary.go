package renderproc

import (
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"sync/atomic"
)

// RenderBinary is the name of the binary syncd's render children run:
// it ships beside syncd (the image has both; hack/build.sh builds both).
// syncd does not link what a render needs (the Helm engine and
// kustomize are linked for the planner, but not the SOPS library and its
// key services), so the process that stays resident is that much smaller.
const RenderBinary = "syncd-render"

// rendersHere says the running binary can be a render child: it called
// Main first thing (syncd-render, and test binaries whose TestMain does),
// so its children re-execute it. syncd does not.
var rendersHere atomic.Bool

// childBinary is the binary a render child runs (findChildBinary, from
// the running binary's path).
func childBinary() (string, error) {
	exe, err := os.Executable()
	if err != nil {
		return "", fmt.Errorf("render child: find syncd's own binary: %w", err)
	}
	return findChildBinary(exe, rendersHere.Load())
}

// findChildBinary is the binary a render child of exe runs: exe itself
// when it renders here, else RenderBinary beside it, else RenderBinary
// on PATH. The error says where it looked and how to install it.
func findChildBinary(exe string, here bool) (string, error) {
	if here {
		return exe, nil
	}
	beside := filepath.Join(filepath.Dir(exe), RenderBinary)
	if isExecutable(beside) {
		return beside, nil
	}
	if p, err := exec.LookPath(RenderBinary); err == nil {
		return filepath.Abs(p)
	}
	return "", errors.New("render child: " + RenderBinary + " is not beside " + exe + " nor on PATH: syncd runs every render in it; install it with syncd (the image has both, hack/build.sh builds both, or go install syncd.dev/syncd/cmd/" + RenderBinary + ")")
}

// isExecutable reports whether path is a regular file someone may run.
func isExecutable(path string) bool {
	st, err := os.Stat(path)
	return err == nil && st.Mode().IsRegular() && st.Mode().Perm()&0o111 != 0
}
