package main

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"os"
	"time"

	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/leader"
)

// Leader election of `syncd run` is package leader: client-go's
// tools/leaderelection on a coordination.k8s.io Lease, with the order of
// a handoff (the Lease released only after the work stopped, a lost Lease
// exits non-zero, a replica that cannot run gives the Lease up). This
// file turns the flags into its Options, its events into log lines and
// its Status into /readyz.

// defaultShutdownGrace is --shutdown-grace-period's default: below the
// install manifests' terminationGracePeriodSeconds (30 s) by enough for
// the HTTP servers' and the Event broadcaster's own shutdown (5 s each).
const defaultShutdownGrace = 20 * time.Second

// leaseNamespace is --leader-elect-namespace, else $POD_NAMESPACE, else
// syncd-system.
func leaseNamespace(f *runFlags) string {
	if f.leaseNamespace != "" {
		return f.leaseNamespace
	}
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	return "syncd-system"
}

// electionFlags are the flags of leader.Options' fields.
var electionFlags = map[string]string{
	"Namespace":     "--leader-elect-namespace",
	"Name":          "--leader-elect-name",
	"Shards":        "--shards",
	"Shard":         "--shard",
	"LeaseDuration": "--leader-elect-lease-duration",
	"RenewDeadline": "--leader-elect-renew-deadline",
	"RetryPeriod":   "--leader-elect-retry-period",
	"ShutdownGrace": "--shutdown-grace-period",
}

// newElector returns the Elector the flags describe; its events go to log.
func newElector(cl *cluster, f *runFlags, log *slog.Logger) (*leader.Elector, error) {
	cs, err := kubernetes.NewForConfig(cl.config)
	if err != nil {
		return nil, err
	}
	el, err := leader.New(cs.CoordinationV1(), leader.Options{
		Namespace:     leaseNamespace(f),
		Name:          f.leaseName,
		Shards:        f.shards,
		Shard:         f.shard,
		LeaseDuration: f.leaseDuration,
		RenewDeadline: f.renewDeadline,
		RetryPeriod:   f.retryPeriod,
		ShutdownGrace: f.shutdownGrace,
		Runnable:      configLoads(f.config),
		OnEvent:       logElection(log, f),
	})
	if oe := (*leader.OptionError)(nil); errors.As(err, &oe) {
		return nil, fmt.Errorf("%s: %w", electionFlags[oe.Field], err)
	}
	return el, err
}

// runElected runs fn while this replica holds the Lease of the flags
// (leader.Elector.Run): a lost Lease or work that outlives the grace
// period exits 1.
func runElected(ctx context.Context, cl *cluster, f *runFlags, log *slog.Logger, fn func(context.Context) error) error {
	el, err := newElector(cl, f, log)
	if err != nil {
		return withCode(exitError, err)
	}
	return runUnder(ctx, el, fn)
}

// runUnder runs fn under el, with the exit code of how it ended.
func runUnder(ctx context.Context, el *leader.Elector, fn func(context.Context) error) error {
	if err := el.Run(ctx, fn); err != nil {
		return withCode(exitError, err)
	}
	return nil
}

// configLoads is whether a replica that gave up a Lease it could not use
// may be a candidate again: once its config file loads (without --config
// there is none to wait for).
func configLoads(path string) func(context.Context) error {
	if path == "" {
		return nil
	}
	return func(context.Context) error {
		_, err := loadConfigForRun(path)
		return err
	}
}

// logElection logs the election's events.
func logElection(log *slog.Logger, f *runFlags) func(leader.Event) {
	return func(ev leader.Event) {
		attrs := ev.Attrs()
		if ev.Kind == leader.CandidateAgain {
			attrs = append(attrs, "config", f.config)
		}
		log.Log(context.Background(), ev.Level(), ev.Message(), attrs...)
	}
}

// readiness is /readyz's answer. el is nil without leader election.
func readiness(el *leader.Elector, d *daemon.Daemon, f *runFlags) (int, string) {
	if el != nil {
		switch st := el.Status(); st.Phase {
		case leader.CannotRun:
			return http.StatusServiceUnavailable, fmt.Sprintf("cannot run: %v", st.Err)
		case leader.Withdrawn:
			// It won a Lease it could not use and released it: not a
			// standby another replica can count on.
			return http.StatusServiceUnavailable, fmt.Sprintf("cannot run: %v; the Lease %s was released for another replica, and this one is a candidate again %s", st.Err, el.Lease(), candidateAgain(f))
		case leader.Standby:
			// A warm standby owns no app yet: it is ready to take over.
			return http.StatusOK, "ok (standby)"
		}
	}
	if !d.Ready() {
		return http.StatusServiceUnavailable, "first reconcile not finished"
	}
	return http.StatusOK, "ok"
}

// candidateAgain says when a replica that released a Lease it could not
// use is a candidate again: once its config loads, and without --config
// after a lease duration.
func candidateAgain(f *runFlags) string {
	if f.config == "" {
		return fmt.Sprintf("after %s", f.leaseDuration)
	}
	return fmt.Sprintf("once %s loads, after at least %s", f.config, f.leaseDuration)
}
