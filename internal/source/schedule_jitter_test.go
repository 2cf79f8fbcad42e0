package source

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"
)

// downPoller fails every poll, as a source behind a down Git host does.
type downPoller struct{ name string }

func (d downPoller) Name() string { return d.name }

func (d downPoller) Poll(context.Context) (Revision, Result, error) {
	return Revision{}, Result{}, errors.New("unreachable")
}

// TestSchedulerRetriesSpreadAfterSharedOutage fails 20 sources at the same
// instant on a fake clock and follows their retries: each retry delay lies
// within the documented bounds (RetryBase doubling, capped at RetryMax,
// plus at most 10% jitter), and the sources' delays differ, so they do not
// hammer the Git host in lock-step when it comes back.
func TestSchedulerRetriesSpreadAfterSharedOutage(t *testing.T) {
	const sources, rounds = 20, 7
	var jobs []Job
	for i := range sources {
		jobs = append(jobs, Job{Poller: downPoller{fmt.Sprintf("s%02d", i)}, Interval: time.Hour})
	}
	h := startSchedulerWith(t, jobs, func(o *SchedulerOptions) {
		o.RetryBase = 5 * time.Second
		o.RetryMax = time.Minute
		o.MaxConcurrent = sources
	})
	base := 5 * time.Second
	for round := 1; round <= rounds; round++ {
		delays := map[string]time.Duration{}
		distinct := map[time.Duration]bool{}
		var latest time.Time
		for range sources {
			e := h.event()
			if e.Failures != round {
				t.Fatalf("round %d: %s reports %d consecutive failures", round, e.Source, e.Failures)
			}
			d := e.Next.Sub(e.Finished)
			delays[e.Source] = d
			distinct[d] = true
			if e.Next.After(latest) {
				latest = e.Next
			}
		}
		for name, d := range delays {
			if d < base || d > base+base/10 {
				t.Errorf("round %d: %s retries after %s, want within [%s, %s]", round, name, d, base, base+base/10)
			}
		}
		if len(distinct) < sources/2 {
			t.Errorf("round %d: only %d distinct retry delays among %d sources: they retry in lock-step (%v)", round, len(distinct), sources, delays)
		}
		// Every source waits for its retry; step past the last one.
		h.waitTimers(sources)
		h.clk.Step(latest.Sub(h.clk.Now()))
		base = min(2*base, time.Minute)
	}
}
