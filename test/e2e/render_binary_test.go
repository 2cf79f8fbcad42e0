package e2e

import (
	"bytes"
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestJourneyRenderBinary: syncd renders in syncd-render, the binary
// beside it. Run by hand, syncd-render says what it is and exits 2.
// syncd copied somewhere alone, with no syncd-render on PATH, refuses a
// render with one error naming the binary, where syncd looked and how to
// install it (exit 1, no crash); with syncd-render on PATH it renders.
func TestJourneyRenderBinary(t *testing.T) {
	w := newWorkspace(t)
	render := filepath.Join(filepath.Dir(bin), "syncd-render")
	code, _, stderr := runBinary(t, render, nil)
	if code != 2 || !strings.Contains(stderr, "not run by hand") {
		t.Errorf("syncd-render by hand: exit %d, stderr %q; want exit 2 saying it is not run by hand", code, stderr)
	}

	app := w.file("app/cm.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: alone, namespace: default}\ndata: {k: v}\n")
	w.writeConfig(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - {name: repo, git: {url: "file:///nowhere", branch: main, interval: 1m}}
apps:
  - {name: alone, source: repo, path: app, namespace: default}
`)
	alone := filepath.Join(t.TempDir(), "syncd")
	copyFile(t, bin, alone)
	args := []string{"render", "--config", w.config, "--app", "alone", "--path", filepath.Dir(app)}
	emptyPath := []string{"PATH=" + t.TempDir()}
	code, stdout, stderr := runBinary(t, alone, emptyPath, args...)
	for _, want := range []string{"syncd-render", alone, "PATH", "go install syncd.dev/syncd/cmd/syncd-render"} {
		if !strings.Contains(stderr, want) {
			t.Errorf("syncd without syncd-render: stderr does not name %q\n%s", want, stderr)
		}
	}
	if code != exitError || stdout != "" || strings.Contains(stderr, "goroutine ") {
		t.Errorf("syncd without syncd-render: exit %d (want %d), stdout %q, stderr %q", code, exitError, stdout, stderr)
	}

	code, stdout, stderr = runBinary(t, alone, []string{"PATH=" + filepath.Dir(render)}, args...)
	if code != 0 || !strings.Contains(stdout, "ConfigMap default/alone") {
		t.Errorf("syncd with syncd-render on PATH: exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}

// runBinary runs path with args, the test's environment and env after
// it, and returns its exit code and output.
func runBinary(t *testing.T, path string, env []string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, path, args...)
	cmd.Env = append(os.Environ(), env...)
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	var ee *exec.ExitError
	switch {
	case errors.As(err, &ee):
		code = ee.ExitCode()
	case err != nil:
		t.Fatalf("%s %v: %v", path, args, err)
	}
	return code, out.String(), errOut.String()
}

// copyFile copies the file from to to, executable.
func copyFile(t *testing.T, from, to string) {
	t.Helper()
	data, err := os.ReadFile(from)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(to, data, 0o755); err != nil {
		t.Fatal(err)
	}
}
