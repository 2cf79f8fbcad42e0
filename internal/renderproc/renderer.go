package renderproc

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"time"

	"syncd.dev/syncd/internal/planner"
)

// sampleEvery is how often the parent reads a child's memory.
var sampleEvery = 5 * time.Millisecond

// maxStderr is how much of a child's stderr is kept to explain a crash.
const maxStderr = 16 << 10

// Renderer runs renders in child processes under its Limits. It is safe
// for concurrent use; renders beyond Limits.Concurrency wait their turn.
type Renderer struct {
	limits Limits
	exe    string
	turns  chan struct{}

	// spareMu guards spare: a child Prestart started, waiting for the
	// next render's request (nil: none).
	spareMu sync.Mutex
	spare   *started

	// cacheMu guards cache: where answers are kept (KeepAnswers; nil:
	// nowhere).
	cacheMu sync.Mutex
	cache   *answerCache
}

// KeepAnswers keeps the answers of renders the tree's content alone
// decides in dir, and reads them back instead of rendering such a tree
// again (see answerCache). A one-shot command gives its cache directory,
// so that its next run on an unchanged repository does not render.
func (r *Renderer) KeepAnswers(dir string) {
	c := newAnswerCache(dir, r.exe)
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	r.cache = c
}

// answers is the cache KeepAnswers set (nil: none).
func (r *Renderer) answers() *answerCache {
	r.cacheMu.Lock()
	defer r.cacheMu.Unlock()
	return r.cache
}

// New returns a Renderer with the limits l (zero fields: defaults).
// Errors name the bad limit and its flag.
func New(l Limits) (*Renderer, error) {
	l, err := l.withDefaults()
	if err != nil {
		return nil, err
	}
	exe, err := childBinary()
	if err != nil {
		return nil, err
	}
	return &Renderer{limits: l, exe: exe, turns: make(chan struct{}, l.Concurrency)}, nil
}

// Default is the process's Renderer with the default limits, for
// callers that are given none (syncd render, plan and apply).
var Default = sync.OnceValues(func() (*Renderer, error) { return New(Limits{}) })

// Limits returns the renderer's limits, defaults filled in.
func (r *Renderer) Limits() Limits { return r.limits }

// Render renders t in a child process (see planner.Render for what a
// render does and returns). A render that reaches a limit returns a
// *LimitError; one that ends because ctx ended returns ctx's error. No
// child outlives the call.
func (r *Renderer) Render(ctx context.Context, t planner.Tree) ([]planner.Manifest, error) {
	if IsChild() {
		return nil, errors.New("render child: a render child may not start another")
	}
	cache := r.answers()
	key := cache.key(t, r.limits)
	if key != "" {
		if ms, ok := cache.read(key, r.limits.Output); ok {
			return ms, nil
		}
	}
	req, err := newRequest(t, r.limits).encode()
	if err != nil {
		return nil, err
	}
	select {
	case r.turns <- struct{}{}:
	case <-ctx.Done():
		return nil, fmt.Errorf("render: waiting for a turn: %w", ctx.Err())
	}
	defer func() { <-r.turns }()
	if key == "" {
		return r.run(ctx, req, nil)
	}
	copyTo, keep := cache.writer(key)
	ms, err := r.run(ctx, req, copyTo)
	keep(err == nil)
	return ms, err
}

// Prestart starts a child now and keeps it for the next render, so that
// the child's start (the exec, and Go initialising every package of
// syncd's binary: about 0.1 s of CPU) overlaps what the caller does
// before it renders (loading the config, fetching the source) instead of
// delaying the render. A one-shot command that will render calls it as
// it starts. The child waits for its request before doing anything else:
// it sets its limits and renders only once it has it, and the render's
// time limit counts from then. At most one child is kept; Prestart with
// one kept does nothing. StopSpare kills a child kept and not used; one
// left when syncd exits dies with it (PR_SET_PDEATHSIG).
func (r *Renderer) Prestart() error {
	if IsChild() {
		return errors.New("render child: a render child may not start another")
	}
	r.spareMu.Lock()
	defer r.spareMu.Unlock()
	if r.spare != nil {
		return nil
	}
	s, err := r.start()
	if err != nil {
		return err
	}
	r.spare = s
	return nil
}

// StopSpare kills and reaps the child Prestart kept, if it was not used.
// The Renderer stays usable.
func (r *Renderer) StopSpare() {
	r.spareMu.Lock()
	s := r.spare
	r.spare = nil
	r.spareMu.Unlock()
	if s != nil {
		s.stop()
	}
}

// takeSpare returns the child Prestart kept and forgets it (nil: none).
func (r *Renderer) takeSpare() *started {
	r.spareMu.Lock()
	defer r.spareMu.Unlock()
	s := r.spare
	r.spare = nil
	return s
}

// started is a child started and waiting for its request on stdin.
type started struct {
	cmd    *exec.Cmd
	req    *os.File // the write end of the child's stdin
	answer *os.File // the read end of the child's answer pipe
	stderr *capped
}

// start starts a child that waits for its request.
func (r *Renderer) start() (*started, error) {
	reqR, reqW, err := os.Pipe()
	if err != nil {
		return nil, fmt.Errorf("render child: %w", err)
	}
	ansR, ansW, err := os.Pipe()
	if err != nil {
		reqR.Close()
		reqW.Close()
		return nil, fmt.Errorf("render child: %w", err)
	}
	s := &started{req: reqW, answer: ansR, stderr: &capped{max: maxStderr}}
	s.cmd = r.command(reqR, ansW, s.stderr)
	err = s.cmd.Start()
	reqR.Close()
	ansW.Close()
	if err != nil {
		reqW.Close()
		ansR.Close()
		return nil, fmt.Errorf("render child: start %s: %w", r.exe, err)
	}
	return s, nil
}

// stop kills a child that was never sent a request and reaps it.
func (s *started) stop() {
	s.req.Close()
	s.answer.Close()
	_ = syscall.Kill(-s.cmd.Process.Pid, syscall.SIGKILL)
	_ = s.cmd.Wait()
}

// send writes req to the child's stdin and closes it. A child that died
// before reading it fails the write, which is not this render's error:
// the child's exit status says what happened.
func (s *started) send(req []byte) {
	_, _ = s.req.Write(req)
	s.req.Close()
}

// run renders req in the child Prestart kept, else in a new one, and
// waits for its answer, copying it to copyTo as it reads it (nil: no
// copy).
func (r *Renderer) run(ctx context.Context, req []byte, copyTo io.Writer) ([]planner.Manifest, error) {
	s := r.takeSpare()
	if s == nil {
		var err error
		if s, err = r.start(); err != nil {
			return nil, err
		}
	}
	defer s.answer.Close()
	go s.send(req)
	c := &child{cmd: s.cmd, limits: r.limits}
	got := make(chan readResult, 1)
	var answer io.Reader = s.answer
	if copyTo != nil {
		answer = io.TeeReader(s.answer, copyTo)
	}
	go func() { got <- readAnswer(answer, r.limits.Output) }()
	c.watch(ctx, got)
	return c.result(ctx, s.stderr.String())
}

// command is the child's command: syncd's binary with only its trigger
// in the environment, its request on stdin, in a process group of its
// own (killed as one), and killed should syncd die.
func (r *Renderer) command(request, answer *os.File, stderr io.Writer) *exec.Cmd {
	cmd := &exec.Cmd{
		Path:       r.exe,
		Args:       []string{"syncd-render"},
		Env:        []string{childEnv + "=" + childEnvValue},
		Dir:        "/",
		Stdin:      request,
		Stderr:     stderr,
		ExtraFiles: []*os.File{answer},
		SysProcAttr: &syscall.SysProcAttr{
			Setpgid:   true,
			Pdeathsig: syscall.SIGKILL,
		},
		WaitDelay: time.Second,
	}
	return cmd
}

// readResult is what was read from a child's answer pipe (readAnswer).
type readResult struct {
	// manifests and renderErr are what the render returned.
	manifests []planner.Manifest
	renderErr error
	// err is set when the answer could not be read or decoded.
	err error
	// over is set when the answer is larger than the output limit.
	over bool
}

// child is one running render child.
type child struct {
	cmd    *exec.Cmd
	limits Limits
	// stopped is the limit that made the parent kill the child ("" when
	// it was not killed for a limit); ctxErr is set when ctx ended.
	stopped Limit
	ctxErr  error
	answer  readResult
	waitErr error
}

// watch waits for the child to answer and exit, killing it when it goes
// over a limit or ctx ends, and reaps it.
func (c *child) watch(ctx context.Context, got <-chan readResult) {
	deadline := time.NewTimer(c.limits.Time)
	defer deadline.Stop()
	tick := time.NewTicker(sampleEvery)
	defer tick.Stop()
	for waiting := true; waiting; {
		select {
		case c.answer = <-got:
			waiting = false
			if c.answer.over {
				c.kill(LimitOutput)
			}
		case <-tick.C:
			if mem, err := memoryOf(c.cmd.Process.Pid); err == nil && mem > c.limits.Memory {
				c.kill(LimitMemory)
			}
		case <-deadline.C:
			c.kill(LimitTime)
		case <-ctx.Done():
			c.ctxErr = ctx.Err()
			c.kill("")
		}
	}
	c.waitErr = c.cmd.Wait()
}

// kill stops the child's process group at once, recording why.
func (c *child) kill(why Limit) {
	if c.stopped == "" {
		c.stopped = why
	}
	_ = syscall.Kill(-c.cmd.Process.Pid, syscall.SIGKILL)
}

// result is what the child's render came to.
func (c *child) result(ctx context.Context, stderr string) ([]planner.Manifest, error) {
	if c.stopped != "" {
		return nil, c.limitError(c.stopped)
	}
	if c.ctxErr != nil {
		return nil, fmt.Errorf("render: %w", c.ctxErr)
	}
	if c.waitErr != nil {
		return nil, c.crashError(stderr)
	}
	if c.answer.err != nil {
		return nil, fmt.Errorf("render child: read the answer: %w", c.answer.err)
	}
	if c.answer.renderErr != nil {
		return nil, c.answer.renderErr
	}
	return c.answer.manifests, nil
}

// limitError is the LimitError for the limit l.
func (c *child) limitError(l Limit) *LimitError {
	return &LimitError{Limit: l, Memory: c.limits.Memory, Time: c.limits.Time, Output: c.limits.Output}
}

// crashError explains a child that exited without answering: out of
// memory (its address space cap), out of CPU time (RLIMIT_CPU's
// SIGKILL), or another crash, with the last line of its stderr.
func (c *child) crashError(stderr string) error {
	if strings.Contains(stderr, "out of memory") {
		return c.limitError(LimitMemory)
	}
	var ee *exec.ExitError
	if errors.As(c.waitErr, &ee) {
		if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() {
			if ws.Signal() == syscall.SIGKILL {
				return fmt.Errorf("render child was killed (%s): by its CPU time limit (%s), or by the kernel for lack of memory; check the pod's memory limit and %s", ws.Signal(), c.limits.Time, FlagMemory)
			}
			return fmt.Errorf("render child was killed (%s)", ws.Signal())
		}
	}
	return fmt.Errorf("render child failed (%w): %s", c.waitErr, lastLine(stderr))
}

// lastLine is the last non-empty line of s.
func lastLine(s string) string {
	lines := strings.Split(strings.TrimSpace(s), "\n")
	return lines[len(lines)-1]
}

// capped is a writer that keeps the first max bytes written to it.
type capped struct {
	mu  sync.Mutex
	b   bytes.Buffer
	max int
}

func (c *capped) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if room := c.max - c.b.Len(); room > 0 {
		c.b.Write(p[:min(len(p), room)])
	}
	return len(p), nil
}

func (c *capped) String() string {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.b.String()
}
