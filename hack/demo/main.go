// Command demo runs syncd end to end on an embedded local control plane
// and checks each step as it narrates it, so it doubles as a smoke test.
//
// It starts etcd, kube-apiserver and kube-controller-manager on loopback
// (built by hack/controlplane.sh), serves a Git repository made from
// examples/ over HTTP on loopback, runs the daemon (`syncd run`) as a
// child process with an alert sink pointing at a webhook receiver of its
// own, and walks through: the first sync and its split managedFields; a
// new commit announced by a push webhook; an out-of-band image edit and a
// /scale write reported as drift with the culprit, by the daemon's alert
// and by `syncd drift`; another team's applies, one refused; a `syncd plan`
// preview of a branch that would conflict and reset replicas; its
// merge, which takes the hand edits back; and App objects: the CRDs
// installed with kubectl apply -k manifests/crds, a team's GitSource and
// App created with kubectl, kubectl wait --for=condition=Ready and the
// columns of kubectl get apps, and the App's deletion pruning; and the
// ownership map, `syncd ui`, whose address it prints (on a terminal it
// waits for Enter so the map can be opened). It stops everything it
// started, also on error or Ctrl-C.
//
// Exit codes: 0 every step did what it said, 1 a step's expectation failed
// (the message names the step), 130 interrupted.
//
// Run it with hack/demo.sh.
package main

import (
	"context"
	"errors"
	"fmt"
	"os"
	"os/signal"
	"path/filepath"
	"strings"
	"syscall"
	"time"
)

func main() {
	start := time.Now()
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	d := &demo{}
	err := d.run(ctx)
	interrupted := ctx.Err() != nil
	stop()
	switch {
	case err == nil:
		fmt.Printf("\n\033[1mDemo finished in %s: every step did what it said.\033[0m\n", time.Since(start).Round(time.Second))
	case interrupted && errors.Is(err, context.Canceled):
		fmt.Fprintln(os.Stderr, "\ndemo interrupted; everything it started is stopped")
		os.Exit(130)
	default:
		fmt.Fprintf(os.Stderr, "\n\033[1;31mdemo failed at step %d (%s):\033[0m %v\n", d.stepNo, d.stepName, err)
		if d.daemonLog != "" {
			fmt.Fprintf(os.Stderr, "\nlast lines of the daemon's log (%s):\n%s\n", d.daemonLog, d.daemonTail)
		}
		os.Exit(1)
	}
}

// run sets up, walks through the steps, and tears down what it set up in
// reverse order whatever happened.
func (d *demo) run(ctx context.Context) (err error) {
	ctx, cancel := context.WithTimeout(ctx, 5*time.Minute)
	defer cancel()
	if d.root, err = repoRoot(); err != nil {
		return err
	}
	if d.dir, err = os.MkdirTemp("", "syncd-demo-"); err != nil {
		return err
	}
	defer func() {
		for i := len(d.cleanups) - 1; i >= 0; i-- {
			if cerr := d.cleanups[i](); cerr != nil && err == nil {
				err = cerr
			}
		}
		_ = os.RemoveAll(d.dir)
	}()
	for _, s := range []func(context.Context) error{
		d.setUp,
		d.firstSync,
		d.newCommit,
		d.outOfBand,
		d.driftAlert,
		d.driftCommand,
		d.otherTeam,
		d.planBranch,
		d.merge,
		d.appObjects,
		d.ownershipUI,
		d.stopDaemon,
	} {
		if err := s(ctx); err != nil {
			if d.daemon != nil {
				d.daemonTail = d.daemon.tail(30)
			}
			if ctx.Err() != nil {
				return fmt.Errorf("%w (%v)", ctx.Err(), err)
			}
			return err
		}
	}
	if err := d.recv.err(); err != nil {
		return err
	}
	return nil
}

// steps is the number of narrated steps, for "[n/steps]".
const steps = 15

func (d *demo) step(format string, args ...any) {
	d.stepNo++
	d.stepName = fmt.Sprintf(format, args...)
	fmt.Printf("\n\033[1m==> [%d/%d] %s\033[0m\n", d.stepNo, steps, d.stepName)
}

// say prints a narration line under the current step.
func say(format string, args ...any) {
	fmt.Printf("    %s\n", fmt.Sprintf(format, args...))
}

// ok prints a checked expectation.
func ok(format string, args ...any) {
	fmt.Printf("    \033[32m✓\033[0m %s\n", fmt.Sprintf(format, args...))
}

// expect returns an error naming what was expected when cond is false.
func expect(cond bool, format string, args ...any) error {
	if cond {
		return nil
	}
	return fmt.Errorf("expected "+format, args...)
}

// waitFor polls cond every 200ms until it is true, returns an error, or
// timeout passes.
func waitFor(ctx context.Context, what string, timeout time.Duration, cond func() (bool, error)) error {
	deadline := time.Now().Add(timeout)
	var last error
	for {
		done, err := cond()
		if done {
			return nil
		}
		last = err
		if time.Now().After(deadline) {
			if last != nil {
				return fmt.Errorf("timed out after %s waiting for %s: %w", timeout, what, last)
			}
			return fmt.Errorf("timed out after %s waiting for %s", timeout, what)
		}
		select {
		case <-ctx.Done():
			return fmt.Errorf("waiting for %s: %w", what, ctx.Err())
		case <-time.After(200 * time.Millisecond):
		}
	}
}

// short is a Git SHA cut to 12 characters.
func short(sha string) string {
	if len(sha) > 12 {
		return sha[:12]
	}
	return sha
}

func repoRoot() (string, error) {
	wd, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for dir := wd; ; dir = filepath.Dir(dir) {
		if data, err := os.ReadFile(filepath.Join(dir, "go.mod")); err == nil && strings.Contains(string(data), "module syncd.dev/syncd") {
			return dir, nil
		}
		if filepath.Dir(dir) == dir {
			return "", fmt.Errorf("run the demo from the syncd repository (no go.mod of syncd.dev/syncd above %s)", wd)
		}
	}
}
