package renderproc

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestChildBinary: a binary that renders here is its own child; syncd
// runs syncd-render beside it, else the one on PATH, else says where it
// looked.
func TestChildBinary(t *testing.T) {
	bin, other, empty := t.TempDir(), t.TempDir(), t.TempDir()
	exe := filepath.Join(bin, "syncd")
	writeExecutable(t, exe)
	writeExecutable(t, filepath.Join(other, RenderBinary))

	t.Setenv("PATH", other)
	got, err := findChildBinary(exe, true)
	if err != nil || got != exe {
		t.Fatalf("renders here: got %q, %v; want %q", got, err, exe)
	}
	got, err = findChildBinary(exe, false)
	if want := filepath.Join(other, RenderBinary); err != nil || got != want {
		t.Fatalf("on PATH: got %q, %v; want %q", got, err, want)
	}
	writeExecutable(t, filepath.Join(bin, RenderBinary))
	got, err = findChildBinary(exe, false)
	if want := filepath.Join(bin, RenderBinary); err != nil || got != want {
		t.Fatalf("beside and on PATH: got %q, %v; want the one beside, %q", got, err, want)
	}

	t.Setenv("PATH", empty)
	lone := filepath.Join(empty, "syncd")
	writeExecutable(t, lone)
	_, err = findChildBinary(lone, false)
	if err == nil {
		t.Fatal("no syncd-render anywhere: no error")
	}
	for _, want := range []string{RenderBinary, lone, "PATH", "hack/build.sh", "go install syncd.dev/syncd/cmd/syncd-render"} {
		if !strings.Contains(err.Error(), want) {
			t.Errorf("error %q does not name %q", err, want)
		}
	}
}

// TestChildBinaryIgnoresNonExecutables: a syncd-render beside syncd
// that is not executable (or a directory) is not run.
func TestChildBinaryIgnoresNonExecutables(t *testing.T) {
	bin := t.TempDir()
	t.Setenv("PATH", t.TempDir())
	exe := filepath.Join(bin, "syncd")
	writeExecutable(t, exe)
	if err := os.WriteFile(filepath.Join(bin, RenderBinary), []byte("x"), 0o644); err != nil {
		t.Fatal(err)
	}
	if got, err := findChildBinary(exe, false); err == nil {
		t.Fatalf("a non-executable syncd-render was chosen: %q", got)
	}
}

func writeExecutable(t *testing.T, path string) {
	t.Helper()
	if err := os.WriteFile(path, []byte("#!/bin/sh\n"), 0o755); err != nil {
		t.Fatal(err)
	}
}
