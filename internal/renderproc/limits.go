package renderproc

import (
	"fmt"
	"time"

	"syncd.dev/syncd/internal/planner"
)

// Defaults of Limits.
const (
	// DefaultMemory is the resident memory one render may use, 256 MiB:
	// ten times what a large chart (kube-prometheus-stack) needs, and
	// little enough that a render and syncd fit the shipped Deployment's
	// memory limit.
	DefaultMemory int64 = 256 << 20
	// DefaultTime is how long one render may run: planner.KustomizeTimeout.
	DefaultTime = planner.KustomizeTimeout
	// DefaultOutput is the largest rendered output (the objects as JSON)
	// one render may return, 32 MiB: syncd decodes and plans all of it
	// in its own memory.
	DefaultOutput int64 = 32 << 20
	// DefaultConcurrency is how many renders run at once.
	DefaultConcurrency = 2
)

// minMemory is the least Memory a Renderer accepts: a render child needs
// about 40 MiB before it reads anything.
const minMemory int64 = 64 << 20

// Limits bound each render a Renderer runs. The zero value of a field
// means its default.
type Limits struct {
	// Memory is the resident memory (bytes) a render's process may use;
	// default DefaultMemory, at least 64 MiB.
	Memory int64
	// Time is how long a render may run, from when its turn comes;
	// default DefaultTime.
	Time time.Duration
	// Output is the largest answer (bytes of JSON) a render may return;
	// default DefaultOutput.
	Output int64
	// Concurrency is how many renders may run at once; default
	// DefaultConcurrency.
	Concurrency int
}

// withDefaults fills unset fields and checks the rest; errors name the
// field and the flag that sets it.
func (l Limits) withDefaults() (Limits, error) {
	if l.Memory == 0 {
		l.Memory = DefaultMemory
	}
	if l.Time == 0 {
		l.Time = DefaultTime
	}
	if l.Output == 0 {
		l.Output = DefaultOutput
	}
	if l.Concurrency == 0 {
		l.Concurrency = DefaultConcurrency
	}
	switch {
	case l.Memory < minMemory:
		return l, fmt.Errorf("render memory limit %s: below the least a render needs (%s): raise %s", mib(l.Memory), mib(minMemory), FlagMemory)
	case l.Time < 0:
		return l, fmt.Errorf("render time limit %s: negative: set %s to a positive duration", l.Time, FlagTime)
	case l.Output < 0:
		return l, fmt.Errorf("render output limit %d: negative: set %s to a positive size", l.Output, FlagOutput)
	case l.Concurrency < 0:
		return l, fmt.Errorf("render concurrency %d: negative: set %s to 1 or more", l.Concurrency, FlagConcurrency)
	}
	return l, nil
}

// The flags of syncd run that set Limits, named in errors.
const (
	FlagMemory      = "--render-memory-limit"
	FlagTime        = "--render-time-limit"
	FlagOutput      = "--render-output-limit"
	FlagConcurrency = "--render-concurrency"
)

// mib formats a size in MiB ("256 MiB"), or bytes when smaller.
func mib(n int64) string {
	if n >= 1<<20 && n%(1<<20) == 0 {
		return fmt.Sprintf("%d MiB", n>>20)
	}
	if n >= 1<<20 {
		return fmt.Sprintf("%.1f MiB", float64(n)/(1<<20))
	}
	return fmt.Sprintf("%d bytes", n)
}
