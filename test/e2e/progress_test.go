package e2e

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os/exec"
	"strings"
	"syscall"
	"testing"

	"github.com/creack/pty"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyProgress: apply, plan and run --once show their progress
// on stderr: on a terminal one line redrawn in place and cleared before
// the command ends, with stdout unchanged; elsewhere (CI logs) a line per
// finished stage; with --quiet nothing.
func TestJourneyProgress(t *testing.T) {
	w := newWorkspace(t)
	const ns = "progress-e2e"
	ensureNamespace(t, ns)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "progress")
	if _, err := repo.Commit("two", map[string][]byte{"app/cms.yaml": []byte(
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\n")}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: progress
    git: {url: %s, branch: main, interval: 1m}
apps:
  - {name: progress, source: progress, path: app, namespace: %s}
`, repo.URL, ns))
	args := []string{"--config", w.config, "--cache-dir", w.cache}

	// Before the apply, so that the objects are dry-run (an object the
	// inventory shows unchanged is not).
	r := w.must(exitChanges, append([]string{"plan", "--app", "progress"}, args...)...)
	if want := "app progress: namespaced: 2/2 objects dry-run in "; !strings.HasPrefix(r.stderr, want) || strings.Count(r.stderr, "\n") != 1 {
		t.Errorf("plan without a terminal: want one line %q...\n%s", want, r)
	}

	stdout, stderr := w.onTerminal(append([]string{"apply"}, args...)...)
	for _, want := range []string{"\r\x1b[Kapp progress: rendering", "\r\x1b[Kapp progress: applying namespaced 2/2 objects "} {
		if !strings.Contains(stderr, want) {
			t.Errorf("apply on a terminal: stderr lacks %q:\n%q", want, stderr)
		}
	}
	if !strings.HasSuffix(stderr, "\r\x1b[K") {
		t.Errorf("apply on a terminal: the progress line is not cleared at the end:\n%q", stderr)
	}
	if want := "ConfigMap " + ns + "/a created\n"; !strings.Contains(stdout, want) || strings.Contains(stdout, "\x1b") {
		t.Errorf("apply on a terminal: stdout lacks %q or has progress in it:\n%q", want, stdout)
	}

	r = w.must(exitOK, append([]string{"run", "--once"}, args...)...)
	if want := "app progress: namespaced: 2/2 objects applied in "; !strings.HasPrefix(r.stderr, want) {
		t.Errorf("run --once without a terminal: want %q...\n%s", want, r)
	}
	for _, cmd := range [][]string{{"apply", "--quiet"}, {"plan", "--app", "progress", "-q"}, {"run", "--once", "--quiet"}} {
		if _, stderr := w.onTerminal(append(cmd, args...)...); stderr != "" {
			t.Errorf("%s on a terminal: want nothing on stderr, got %q", strings.Join(cmd, " "), stderr)
		}
	}
}

// onTerminal runs syncd with its stderr on a pseudo-terminal and its
// stdout on a pipe, and returns both; a non-zero exit fails the test.
func (w *workspace) onTerminal(args ...string) (stdout, stderr string) {
	w.t.Helper()
	ptm, tty, err := pty.Open()
	if err != nil {
		w.t.Fatal(err)
	}
	defer ptm.Close()
	ctx, cancel := context.WithTimeout(context.Background(), commandTimeout)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, args...)
	cmd.Env = append(w.environ(), "TERM=xterm")
	var out bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, tty
	if err := cmd.Start(); err != nil {
		w.t.Fatal(err)
	}
	tty.Close()
	var errOut bytes.Buffer
	// Reading the terminal ends with EIO once syncd, its only writer,
	// exited.
	if _, err := io.Copy(&errOut, ptm); err != nil && !errors.Is(err, syscall.EIO) {
		w.t.Fatalf("read the terminal: %v", err)
	}
	err = cmd.Wait()
	w.record(out.String(), errOut.String())
	if err != nil {
		w.t.Fatalf("syncd %s on a terminal: %v\n--- stdout\n%s--- stderr\n%q", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String(), errOut.String()
}
