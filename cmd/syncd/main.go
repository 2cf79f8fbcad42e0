// Command syncd is a GitOps reconciliation daemon for Kubernetes built on
// Server-Side Apply. See README.md for the commands.
package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"syscall"

	"k8s.io/client-go/rest"
	"k8s.io/klog/v2"

	"syncd.dev/syncd/internal/memlimit"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/source"
)

// Exit codes shared by every command.
const (
	exitOK       = 0
	exitError    = 1
	exitChanges  = 2 // plan/drift: there is something to report
	exitConflict = 3 // field conflicts or guards blocked the run
)

// exitError carries the process exit code of a command.
type exitCodeError struct {
	code int
	err  error
}

func (e *exitCodeError) Error() string {
	if e.err == nil {
		return fmt.Sprintf("exit %d", e.code)
	}
	return e.err.Error()
}

func (e *exitCodeError) Unwrap() error { return e.err }

// memLimit is the Go memory limit main set from the container's memory
// limit (or found set by GOMEMLIMIT), and memLimitErr why it could not
// read the container's, for syncd run to log.
var (
	memLimit    memlimit.Result
	memLimitErr error
)

// withCode wraps err so that main exits with code. A nil err with a code
// exits silently with that code.
func withCode(code int, err error) error { return &exitCodeError{code: code, err: err} }

func main() {
	// The Go memory limit comes from the container's before anything
	// allocates much; syncd run logs what was set (logMemoryLimit).
	memLimit, memLimitErr = memlimit.Set(memlimit.Options{})
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	if err := forbidDefaultNetwork(); err != nil {
		fmt.Fprintln(os.Stderr, "syncd:", err)
		os.Exit(exitError)
	}
	rest.SetDefaultWarningHandler(printWarnings(os.Stderr))
	// client-go's own log lines (discovery retries, "Couldn't get current
	// server API group list") repeat what a command's error says once;
	// the one-shot commands keep them off stderr. syncd run routes them
	// into its log (routeClientLogs).
	klog.SetSlogLogger(slog.New(slog.DiscardHandler))
	os.Exit(run(ctx, os.Args[1:], os.Stdout, os.Stderr))
}

// run executes one syncd command line and returns its exit code.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	root := newRootCommand()
	root.SetArgs(args)
	root.SetOut(stdout)
	root.SetErr(stderr)
	err := root.ExecuteContext(ctx)
	if err == nil {
		return exitOK
	}
	var ce *exitCodeError
	if errors.As(err, &ce) {
		if ce.err != nil {
			fmt.Fprintln(root.ErrOrStderr(), "error:", redact.Error(ce.err))
			printHint(root.ErrOrStderr(), ce.err)
		}
		return ce.code
	}
	fmt.Fprintln(root.ErrOrStderr(), "error:", redact.Error(err))
	printHint(root.ErrOrStderr(), err)
	return exitError
}

// printHint adds what to do for errors whose cause is not the command's
// input: a cluster that cannot be reached. A source that cannot be
// reached (a Git server, a Helm repository, a registry) is not the
// cluster: its error names it and says what to do.
func printHint(w io.Writer, err error) {
	var op *net.OpError
	var se *source.Error
	if errors.As(err, &op) && op.Op == "dial" && !errors.As(err, &se) {
		fmt.Fprintf(w, "hint: syncd could not connect to the API server at %s; check that the cluster is up and that --kubeconfig and --context (or KUBECONFIG) point at it\n", op.Addr)
	}
}
