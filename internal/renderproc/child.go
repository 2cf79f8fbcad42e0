package renderproc

import (
	"context"
	"encoding/gob"
	"fmt"
	"io"
	"os"
	"runtime/debug"
	"syscall"

	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/planner"
)

// childEnv is the environment variable that makes a process started from
// syncd's binary a render child (its value is childEnvValue).
const childEnv = "SYNCD_RENDER_CHILD"

// childEnvValue is childEnv's value.
const childEnvValue = "1"

// answerFD is the file descriptor a child writes its answer to
// (exec.Cmd.ExtraFiles[0]).
const answerFD = 3

// Exit codes of a child that could not render (a render's own error is
// an answer, exit 0).
const (
	exitChildSetup = 3 // the request could not be read or the limits set
	exitChildWrite = 4 // the answer could not be written
)

// asSlack is the address space a child may reserve beyond what it had
// when it started plus its memory limit: the Go runtime reserves heap
// arenas 64 MiB at a time, with metadata beside them.
const asSlack int64 = 256 << 20

// memoryLimitShare is the share of the memory limit the child's Go
// memory limit (debug.SetMemoryLimit) is set to: above it the collector
// runs often, before the limit kills the child.
const memoryLimitShare = 0.8

// IsChild reports whether this process is a render child. A child never
// starts another.
func IsChild() bool { return os.Getenv(childEnv) == childEnvValue }

// Main makes this process a render child when syncd started it as one:
// it renders the request on stdin and exits. Otherwise it returns at
// once, and the binary's own Renderers run it as their child
// (childBinary). Call it first in syncd-render's main and in the
// TestMain of every test binary whose tests render through a Renderer,
// in a binary that imports package sopsfile (or SOPS files cannot be
// read).
func Main() {
	rendersHere.Store(true)
	if !IsChild() {
		return
	}
	os.Exit(serve(os.Stdin, os.NewFile(answerFD, "answer")))
}

// serve reads one request from in, renders it under its limits and
// writes the answer to out. It returns the process's exit code.
func serve(in io.Reader, out io.Writer) int {
	var req request
	if err := gob.NewDecoder(in).Decode(&req); err != nil {
		fmt.Fprintln(os.Stderr, "syncd render child: read request:", err)
		return exitChildSetup
	}
	if err := limitSelf(req); err != nil {
		fmt.Fprintln(os.Stderr, "syncd render child:", err)
		return exitChildSetup
	}
	ms, renderErr := render(req)
	if err := writeAnswer(out, ms, renderErr); err != nil {
		fmt.Fprintln(os.Stderr, "syncd render child: answer:", err)
		return exitChildWrite
	}
	return 0
}

// render renders the request offline.
func render(req request) ([]planner.Manifest, error) {
	t, err := req.tree()
	if err != nil {
		return nil, err
	}
	ctx, cancel := context.WithTimeout(context.Background(), req.Time)
	defer cancel()
	return planner.Render(ctx, t)
}

// limitSelf sets the child's own limits: the network block, the address
// space and CPU time caps, the Go memory limit, and the kernel's
// out-of-memory preference.
func limitSelf(req request) error {
	if _, err := egress.Forbid(); err != nil {
		return err
	}
	vsz, err := addressSpace()
	if err != nil {
		return err
	}
	as := uint64(vsz + req.Memory + asSlack)
	if err := syscall.Setrlimit(syscall.RLIMIT_AS, &syscall.Rlimit{Cur: as, Max: as}); err != nil {
		return fmt.Errorf("set the address space limit: %w", err)
	}
	cpu := uint64(req.Time.Seconds()) + 1
	if err := syscall.Setrlimit(syscall.RLIMIT_CPU, &syscall.Rlimit{Cur: cpu, Max: cpu}); err != nil {
		return fmt.Errorf("set the CPU time limit: %w", err)
	}
	debug.SetMemoryLimit(int64(float64(req.Memory) * memoryLimitShare))
	// Raising one's own score needs no privilege; a kernel that refuses
	// leaves the child an ordinary candidate, which the limits above
	// already bound.
	_ = os.WriteFile("/proc/self/oom_score_adj", []byte("1000"), 0)
	return nil
}
