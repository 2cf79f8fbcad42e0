package leader

import (
	"context"
	"fmt"
	"os"
	"time"

	"github.com/google/uuid"
	"k8s.io/client-go/tools/leaderelection"
	"k8s.io/utils/clock"
)

// Options configures an Elector. The zero value of a field is its
// default where one is documented; Namespace and Name are required.
type Options struct {
	// Namespace is the namespace of the Lease (required).
	Namespace string
	// Name is the base name of the Lease (required): the Lease is Name,
	// or Name-shard-K-of-N when Shards > 1 (LeaseName).
	Name string
	// Shards is the number of shard Leases of this layout (1 or less:
	// not sharded), and Shard the one this replica runs (0..Shards-1;
	// ignored when not sharded).
	Shards, Shard int
	// Identity is this replica's holder identity in the Lease (default:
	// the host name, "_" and 8 random hex digits, unique per Elector).
	Identity string

	// LeaseDuration is how long a Lease is valid without renewal: the
	// failover time (default 15s).
	LeaseDuration time.Duration
	// RenewDeadline is how long the leader retries renewing before it
	// gives the Lease up (default 10s). It must be less than
	// LeaseDuration.
	RenewDeadline time.Duration
	// RetryPeriod is how often candidates try to acquire and the leader
	// to renew (default 2s). RenewDeadline must exceed it by client-go's
	// JitterFactor (1.2).
	RetryPeriod time.Duration
	// ShutdownGrace is how long the work may take to stop once the
	// caller's context ended before Run returns ErrUndrained (0: no
	// limit). It also bounds the wait after a lost Lease.
	ShutdownGrace time.Duration

	// Runnable, when set, says whether a replica that gave up a Lease it
	// could not use may be a candidate again (nil error: yes). It is
	// asked every RetryPeriod, once a lease duration has passed. Nil:
	// always, after a lease duration.
	Runnable func(context.Context) error
	// OnEvent, when set, is told what happens (for the caller's log). It
	// is called one event at a time, from the Elector's goroutines, and
	// must not block.
	OnEvent func(Event)
	// Clock is for tests (default the real clock). It times the grace
	// periods and waits of this package; client-go's elector keeps its
	// own real clock.
	Clock clock.WithTicker
}

// Option defaults, those of client-go's core components.
const (
	DefaultLeaseDuration = 15 * time.Second
	DefaultRenewDeadline = 10 * time.Second
	DefaultRetryPeriod   = 2 * time.Second
)

// OptionError is an invalid Options field.
type OptionError struct {
	// Field is the Options field, as spelled in Go ("RenewDeadline").
	Field string
	// Reason says what is wrong with it.
	Reason string
}

func (e *OptionError) Error() string {
	return fmt.Sprintf("leader election: %s %s", e.Field, e.Reason)
}

// withDefaults returns o with its zero fields defaulted.
func (o Options) withDefaults() Options {
	if o.LeaseDuration == 0 {
		o.LeaseDuration = DefaultLeaseDuration
	}
	if o.RenewDeadline == 0 {
		o.RenewDeadline = DefaultRenewDeadline
	}
	if o.RetryPeriod == 0 {
		o.RetryPeriod = DefaultRetryPeriod
	}
	if o.Identity == "" {
		host, _ := os.Hostname()
		o.Identity = host + "_" + uuid.NewString()[:8]
	}
	if o.Clock == nil {
		o.Clock = clock.RealClock{}
	}
	if o.OnEvent == nil {
		o.OnEvent = func(Event) {}
	}
	return o
}

// validate checks defaulted options, naming the first bad field.
func (o Options) validate() error {
	for _, check := range []func(Options) *OptionError{checkLease, checkDurations, checkShard} {
		if err := check(o); err != nil {
			return err
		}
	}
	return nil
}

// checkLease requires the Lease's namespace and name.
func checkLease(o Options) *OptionError {
	switch {
	case o.Namespace == "":
		return &OptionError{Field: "Namespace", Reason: "is empty: the Lease needs a namespace"}
	case o.Name == "":
		return &OptionError{Field: "Name", Reason: "is empty: the Lease needs a name"}
	}
	return nil
}

// checkDurations applies client-go's rules (NewLeaderElector) with the
// values in the message, and refuses a negative grace period.
func checkDurations(o Options) *OptionError {
	switch {
	case o.LeaseDuration < 0 || o.RenewDeadline < 0 || o.RetryPeriod < 0:
		return &OptionError{Field: negative(o), Reason: "must not be negative"}
	case o.LeaseDuration <= o.RenewDeadline:
		return &OptionError{Field: "LeaseDuration", Reason: fmt.Sprintf("%s must be greater than RenewDeadline %s", o.LeaseDuration, o.RenewDeadline)}
	case o.RenewDeadline <= time.Duration(leaderelection.JitterFactor*float64(o.RetryPeriod)):
		return &OptionError{Field: "RenewDeadline", Reason: fmt.Sprintf("%s must be greater than RetryPeriod %s × %g", o.RenewDeadline, o.RetryPeriod, leaderelection.JitterFactor)}
	case o.ShutdownGrace < 0:
		return &OptionError{Field: "ShutdownGrace", Reason: fmt.Sprintf("%s must not be negative (0: no limit)", o.ShutdownGrace)}
	}
	return nil
}

// negative names the first negative duration of the election.
func negative(o Options) string {
	switch {
	case o.LeaseDuration < 0:
		return "LeaseDuration"
	case o.RenewDeadline < 0:
		return "RenewDeadline"
	}
	return "RetryPeriod"
}

// checkShard requires Shard to be one of Shards when there are shards
// (the daemon's rule: with one shard or none, Shard is not used).
func checkShard(o Options) *OptionError {
	if o.Shards > 1 && (o.Shard < 0 || o.Shard >= o.Shards) {
		return &OptionError{Field: "Shard", Reason: fmt.Sprintf("%d is out of range for %d shards (0..%d)", o.Shard, o.Shards, o.Shards-1)}
	}
	return nil
}

// LeaseName is the Lease of a replica: base, or base-shard-K-of-N when
// apps are spread over N shards. The count is in the name so that the
// Leases of two shard layouts (a re-shard from 2 to 3 in progress) never
// share a name while they guard different sets of apps, and a leader can
// tell another layout's Leases from its own (layout.go); the Leases of an
// old layout are simply abandoned and expire.
func LeaseName(base string, shards, shard int) string {
	if shards <= 1 {
		return base
	}
	return fmt.Sprintf("%s-shard-%d-of-%d", base, shard, shards)
}

// lostWait is how long a replica that lost its Lease may still let its
// work in flight finish: the renewals stopped at least the renew deadline
// (plus one retry period) before the loss was noticed, and no other
// replica may acquire the Lease before a lease duration passed without
// renewal. Never longer than the grace period.
func (o Options) lostWait() time.Duration {
	w := max(o.LeaseDuration-o.RenewDeadline-o.RetryPeriod, 0)
	if o.ShutdownGrace > 0 {
		w = min(w, o.ShutdownGrace)
	}
	return w
}
