package source

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"sort"
	"sync"
	"time"

	"github.com/robfig/cron/v3"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// parseSchedule parses a standard 5-field cron expression or a descriptor
// such as "@hourly" or "@every 90s".
func parseSchedule(spec string) (cron.Schedule, error) {
	return cron.ParseStandard(spec)
}

// Poller is what the Scheduler runs; *Source implements it.
type Poller interface {
	Name() string
	Poll(ctx context.Context) (Revision, Result, error)
}

var _ Poller = (*Source)(nil)

// Job is one Poller and when to run it: exactly one of Interval and
// Schedule is set.
type Job struct {
	Poller   Poller
	Interval time.Duration
	// Schedule is a cron expression (see parseSchedule).
	Schedule string
}

// Job returns the scheduling job for the source's configured interval or
// schedule.
func (s *Source) Job() Job {
	return Job{Poller: s, Schedule: s.spec.Schedule, Interval: s.spec.Interval}
}

// Cause says why a poll ran.
type Cause string

// Poll causes.
const (
	CauseStart    Cause = "start"
	CauseSchedule Cause = "schedule"
	CauseManual   Cause = "manual"
)

// Event is delivered after every poll the Scheduler runs.
type Event struct {
	Source   string
	Cause    Cause
	Revision Revision
	Result   Result
	// Err is non-nil when the poll failed (usually an *Error); the
	// source's previous revision stays in force.
	Err error
	// Failures counts the source's consecutive failed polls, this one
	// included: 0 after a poll that succeeded.
	Failures int
	// Next is when the scheduler polls the source again unless Trigger
	// asks sooner: after a success, the interval (plus jitter) or the
	// schedule; after a failure, the retry with backoff and jitter (see
	// SchedulerOptions.RetryBase), never later than the interval or
	// schedule would have polled.
	Next time.Time
	// Started and Finished are read from the scheduler's clock.
	Started, Finished time.Time
}

// SchedulerOptions configure a Scheduler.
type SchedulerOptions struct {
	// OnPoll receives an Event after each poll (required). It is called
	// from the job's goroutine: polls of one source are delivered in order,
	// and a slow OnPoll delays that source's next poll when it returns
	// after Event.Next.
	OnPoll func(Event)
	// Clock drives timers; default the real clock.
	Clock clock.WithTicker
	// Jitter returns the extra delay added to an interval; default a
	// uniformly random duration in [0, d/10).
	Jitter func(d time.Duration) time.Duration
	// RetryBase is the delay before the first retry after a failed poll;
	// it doubles with each consecutive failure up to RetryMax, and a
	// successful poll resets it. Default 5 seconds. The backoff is
	// apimachinery's wait.Backoff, one per source.
	RetryBase time.Duration
	// RetryJitter lengthens each retry delay by a random part of it, up
	// to this fraction, so sources that failed together (a Git host
	// outage) do not retry in lock-step; default 0.1 (up to 10%),
	// negative for none.
	RetryJitter float64
	// RetryMax caps the retry delay; default 5 minutes. A retry never
	// comes later than the source's interval or schedule would poll, so
	// for a source polled more often than RetryMax the interval is the
	// effective cap.
	RetryMax time.Duration
	// PollTimeout bounds one poll; default 5 minutes.
	PollTimeout time.Duration
	// MaxConcurrent bounds polls running at once across sources;
	// default 4.
	MaxConcurrent int
	// StartSpread bounds how late a source's first poll may come after
	// Run starts, so sources do not all poll at once; default 30 seconds,
	// negative for none. The jobs' first polls are spaced evenly: job i of
	// n waits i/n of min(StartSpread, its interval or the time to its
	// first scheduled run), so the first job polls at once. A Trigger
	// during the wait polls at once.
	StartSpread time.Duration
}

// Scheduler runs each Job's Poll at its start (spread over StartSpread),
// then on its interval (plus
// jitter, so many sources drift apart) or cron schedule, and whenever
// Trigger asks. Polls of one source never overlap: a trigger that arrives
// while that source is polling queues exactly one more poll.
//
// A failed poll is retried sooner than the interval or schedule, with
// exponential backoff per source: RetryBase, doubling with each
// consecutive failure, capped at RetryMax (each delay plus up to
// RetryJitter of it), and never later than the source's next regular poll.
// The first success resets it. One source's failures never delay another
// source.
type Scheduler struct {
	jobs  []scheduled
	byKey map[string]*scheduled
	opts  SchedulerOptions
	sem   chan struct{}
}

type scheduled struct {
	job     Job
	cron    cron.Schedule
	trigger chan struct{}
	// failures counts consecutive failed polls and backoff gives the next
	// retry delay; only the job's goroutine reads and writes them.
	failures int
	backoff  wait.Backoff
}

// NewScheduler checks the jobs (unique names, exactly one of interval and
// schedule) and returns a Scheduler; Run starts it.
func NewScheduler(jobs []Job, opts SchedulerOptions) (*Scheduler, error) {
	if opts.OnPoll == nil {
		return nil, errors.New("source scheduler: SchedulerOptions.OnPoll is required")
	}
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	if opts.Jitter == nil {
		opts.Jitter = func(d time.Duration) time.Duration {
			if d < 10 {
				return 0
			}
			return rand.N(d / 10)
		}
	}
	if opts.PollTimeout <= 0 {
		opts.PollTimeout = 5 * time.Minute
	}
	if opts.MaxConcurrent <= 0 {
		opts.MaxConcurrent = 4
	}
	if opts.RetryBase <= 0 {
		opts.RetryBase = 5 * time.Second
	}
	if opts.RetryMax <= 0 {
		opts.RetryMax = 5 * time.Minute
	}
	if opts.RetryJitter == 0 {
		opts.RetryJitter = 0.1
	}
	if opts.StartSpread == 0 {
		opts.StartSpread = 30 * time.Second
	}
	if opts.RetryMax < opts.RetryBase {
		return nil, fmt.Errorf("source scheduler: SchedulerOptions.RetryMax (%s) must not be below RetryBase (%s)", opts.RetryMax, opts.RetryBase)
	}
	s := &Scheduler{opts: opts, byKey: map[string]*scheduled{}, sem: make(chan struct{}, opts.MaxConcurrent)}
	s.jobs = make([]scheduled, len(jobs))
	for i, j := range jobs {
		if j.Poller == nil {
			return nil, fmt.Errorf("source scheduler: job %d has no Poller", i)
		}
		name := j.Poller.Name()
		if _, dup := s.byKey[name]; dup {
			return nil, fmt.Errorf("source scheduler: source %q is scheduled twice", name)
		}
		if (j.Interval > 0) == (j.Schedule != "") {
			return nil, fmt.Errorf("source scheduler: source %q: set exactly one of interval (> 0) and schedule", name)
		}
		s.jobs[i] = scheduled{job: j, trigger: make(chan struct{}, 1), backoff: s.newBackoff()}
		if j.Schedule != "" {
			c, err := parseSchedule(j.Schedule)
			if err != nil {
				return nil, fmt.Errorf("source scheduler: source %q: schedule %q: %w", name, j.Schedule, err)
			}
			s.jobs[i].cron = c
		}
		s.byKey[name] = &s.jobs[i]
	}
	return s, nil
}

// Names returns the scheduled sources' names, sorted.
func (s *Scheduler) Names() []string {
	out := make([]string, 0, len(s.byKey))
	for n := range s.byKey {
		out = append(out, n)
	}
	sort.Strings(out)
	return out
}

// Trigger asks for an immediate poll of the named source. It does not wait:
// if the source is polling now, one more poll follows; several triggers
// during one poll make one extra poll.
func (s *Scheduler) Trigger(name string) error {
	j, ok := s.byKey[name]
	if !ok {
		return fmt.Errorf("source scheduler: no source named %q", name)
	}
	select {
	case j.trigger <- struct{}{}:
	default:
	}
	return nil
}

// Run polls every job until ctx is done, then waits for running polls to
// return (their contexts are canceled) and returns ctx.Err(). The first
// polls are spread over SchedulerOptions.StartSpread.
func (s *Scheduler) Run(ctx context.Context) error {
	delays := s.startDelays(s.opts.Clock.Now())
	var wg sync.WaitGroup
	for i := range s.jobs {
		wg.Add(1)
		go func(j *scheduled, delay time.Duration) {
			defer wg.Done()
			s.loop(ctx, j, delay)
		}(&s.jobs[i], delays[i])
	}
	wg.Wait()
	return ctx.Err()
}

// startDelays returns how long each job waits for its first poll when Run
// starts at now: job i of n waits i/n of its window, the smaller of
// StartSpread and the job's period (its interval, or the time to its first
// scheduled run). Even spacing, unlike a random draw, never bunches polls
// and lets a single source poll at once.
func (s *Scheduler) startDelays(now time.Time) []time.Duration {
	out := make([]time.Duration, len(s.jobs))
	if s.opts.StartSpread <= 0 {
		return out
	}
	n := time.Duration(len(s.jobs))
	for i, j := range s.jobs {
		window := j.job.Interval
		if j.cron != nil {
			window = j.cron.Next(now).Sub(now)
		}
		window = min(window, s.opts.StartSpread)
		out[i] = window / n * time.Duration(i)
	}
	return out
}

func (s *Scheduler) loop(ctx context.Context, j *scheduled, startDelay time.Duration) {
	clk := s.opts.Clock
	cause := CauseStart
	if startDelay > 0 {
		timer := clk.NewTimer(startDelay)
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
		case <-j.trigger:
			timer.Stop()
			cause = CauseManual
		}
	}
	for {
		// Drain a trigger that arrived before this poll: the poll serves it.
		select {
		case <-j.trigger:
		default:
		}
		next, ok := s.poll(ctx, j, cause)
		if !ok {
			return
		}
		timer := clk.NewTimer(next.Sub(clk.Now()))
		select {
		case <-ctx.Done():
			timer.Stop()
			return
		case <-timer.C():
			cause = CauseSchedule
		case <-j.trigger:
			timer.Stop()
			cause = CauseManual
		}
	}
}

// next returns when the job runs after a poll that ended at now: its
// regular poll, or after retry (0: the poll succeeded) when that comes
// first.
func (s *Scheduler) next(j *scheduled, now time.Time, retry time.Duration) time.Time {
	var regular time.Time
	if j.cron != nil {
		regular = j.cron.Next(now)
	} else {
		regular = now.Add(j.job.Interval + s.opts.Jitter(j.job.Interval))
	}
	if retry > 0 && now.Add(retry).Before(regular) {
		return now.Add(retry)
	}
	return regular
}

// newBackoff returns a source's retry backoff before its first failure:
// RetryBase, doubling with each Step up to RetryMax, each delay plus up to
// RetryJitter of it. Steps never run out: at the cap it stays there.
func (s *Scheduler) newBackoff() wait.Backoff {
	return wait.Backoff{Duration: s.opts.RetryBase, Factor: 2, Jitter: s.opts.RetryJitter, Steps: math.MaxInt32, Cap: s.opts.RetryMax}
}

// poll runs one poll, delivers its event and returns when the job runs
// next; false when ctx is done.
func (s *Scheduler) poll(ctx context.Context, j *scheduled, cause Cause) (time.Time, bool) {
	select {
	case s.sem <- struct{}{}:
	case <-ctx.Done():
		return time.Time{}, false
	}
	pctx, cancel := context.WithTimeout(ctx, s.opts.PollTimeout)
	ev := Event{Source: j.job.Poller.Name(), Cause: cause, Started: s.opts.Clock.Now()}
	ev.Revision, ev.Result, ev.Err = j.job.Poller.Poll(pctx)
	ev.Finished = s.opts.Clock.Now()
	cancel()
	// The slot is free before OnPoll runs: a slow OnPoll delays only
	// this source.
	<-s.sem
	var retry time.Duration
	if ev.Err != nil {
		j.failures++
		retry = j.backoff.Step()
	} else {
		j.failures = 0
		j.backoff = s.newBackoff()
	}
	ev.Failures = j.failures
	ev.Next = s.next(j, ev.Finished, retry)
	s.opts.OnPoll(ev)
	return ev.Next, ctx.Err() == nil
}
