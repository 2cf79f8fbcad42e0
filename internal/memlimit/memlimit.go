package memlimit

import (
	"errors"
	"fmt"
	"math"
	"os"
	"runtime/debug"

	automemlimit "github.com/KimMachineGun/automemlimit/memlimit"
)

// DefaultRatio is the share of the container's memory limit that becomes
// the Go memory limit: the rest is left for what the Go limit does not
// count (the binary's pages, memory outside the runtime) and for the
// collector's overshoot.
const DefaultRatio = 0.9

// DefaultReserve is the least of the container's memory limit the Go
// memory limit leaves to what it does not count: the binary's own
// resident pages, about 50 MiB of the shipped (static, stripped) syncd
// at work (70 before the SOPS library moved to syncd-render), which are
// charged to the container too, and room for the collector's overshoot.
// 10 % of a small limit is less than that: with 256 MiB, a Go limit of
// 90 % (230 MiB) let the heap and the binary's pages together pass the
// container's limit, and the kernel then reclaimed the binary's pages
// over and over (the cgroup's limit hit millions of times) until syncd
// was too slow to renew its Lease (bench's BenchmarkRunConfig with
// BENCH_CGROUP_LIMIT=256M).
const DefaultReserve int64 = 80 << 20

// minShare is the least share of the container's limit the Go limit is
// set to when the reserve would leave less: a container smaller than
// about twice the reserve is too small for syncd either way, and a Go
// limit far below it would only make the collector run without pause.
const minShare = 0.5

// EnvVar is the environment variable that sets the Go memory limit by
// hand; when it is set, Set leaves the limit as the runtime read it.
const EnvVar = "GOMEMLIMIT"

// Source says where the Go memory limit in force came from.
type Source string

// Sources of the Go memory limit.
const (
	// SourceEnv is a GOMEMLIMIT set in the environment, left as it is.
	SourceEnv Source = "GOMEMLIMIT"
	// SourceCgroup is the container's cgroup memory limit times the
	// ratio.
	SourceCgroup Source = "cgroup"
	// SourceNone is no limit: no GOMEMLIMIT and no container limit (or
	// one that could not be read).
	SourceNone Source = "none"
)

// Provider returns the container's memory limit in bytes, or an error
// wrapping automemlimit's ErrNoLimit when there is none.
type Provider = automemlimit.Provider

// FromCgroup is the Provider of a real process: the memory limit of the
// cgroup (v2 or v1) the process runs in.
var FromCgroup Provider = automemlimit.FromCgroup

// ErrNoLimit is what a Provider returns when the container has no memory
// limit.
var ErrNoLimit = automemlimit.ErrNoLimit

// Options are Set's settings; the zero value reads the process's cgroup
// and environment and sets the runtime's limit.
type Options struct {
	// Ratio is the share of the container's limit used (0: DefaultRatio);
	// it must be in (0, 1].
	Ratio float64
	// Reserve is the least of the container's limit left out of the Go
	// limit (0: DefaultReserve; negative: none), down to half the
	// container's limit: the Go limit is the smaller of Ratio of the
	// container's limit and the container's limit less Reserve.
	Reserve int64
	// Provider reads the container's limit (nil: FromCgroup).
	Provider Provider
	// Getenv reads the environment (nil: os.Getenv).
	Getenv func(string) string
	// SetLimit sets the Go memory limit and returns the previous one, as
	// debug.SetMemoryLimit does (a negative argument only reads it) (nil:
	// debug.SetMemoryLimit).
	SetLimit func(int64) int64
}

// Result is the Go memory limit in force after Set and where it came from.
type Result struct {
	Source Source
	// Limit is the Go memory limit in bytes (math.MaxInt64: none).
	Limit int64
	// Container is the container's memory limit in bytes (0: none, or
	// not read because GOMEMLIMIT is set).
	Container uint64
}

// Set sets the Go memory limit from the container's memory limit unless
// GOMEMLIMIT is set, and returns the limit in force. An error (the cgroup
// files could not be read) leaves the limit as it was, with a Result that
// says so; it is not a reason to stop.
func Set(opts Options) (Result, error) {
	opts = opts.withDefaults()
	if opts.Ratio <= 0 || opts.Ratio > 1 || math.IsNaN(opts.Ratio) {
		return Result{Source: SourceNone, Limit: opts.SetLimit(-1)}, fmt.Errorf("memory limit: ratio %v: must be above 0 and at most 1", opts.Ratio)
	}
	if v := opts.Getenv(EnvVar); v != "" {
		return Result{Source: SourceEnv, Limit: opts.SetLimit(-1)}, nil
	}
	container, err := opts.Provider()
	if errors.Is(err, ErrNoLimit) {
		return Result{Source: SourceNone, Limit: opts.SetLimit(-1)}, nil
	}
	if err != nil {
		return Result{Source: SourceNone, Limit: opts.SetLimit(-1)}, fmt.Errorf("memory limit: read the container's cgroup limit: %w; set GOMEMLIMIT to about 90%% of the container's memory limit instead", err)
	}
	limit := goLimit(container, opts.Ratio, opts.Reserve)
	opts.SetLimit(limit)
	return Result{Source: SourceCgroup, Limit: limit, Container: container}, nil
}

// goLimit is the Go memory limit for a container's limit: ratio of it,
// or the container's limit less reserve when that is smaller, but not
// below minShare of it.
func goLimit(container uint64, ratio float64, reserve int64) int64 {
	c := float64(container)
	l := min(c*ratio, max(c-float64(max(reserve, 0)), c*minShare))
	if l >= math.MaxInt64 {
		return math.MaxInt64
	}
	return int64(l)
}

func (o Options) withDefaults() Options {
	if o.Ratio == 0 {
		o.Ratio = DefaultRatio
	}
	if o.Reserve == 0 {
		o.Reserve = DefaultReserve
	}
	if o.Provider == nil {
		o.Provider = FromCgroup
	}
	if o.Getenv == nil {
		o.Getenv = os.Getenv
	}
	if o.SetLimit == nil {
		o.SetLimit = debug.SetMemoryLimit
	}
	return o
}
