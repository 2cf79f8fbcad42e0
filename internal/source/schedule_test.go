package source

import (
	"context"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakePoller counts polls; when gate is set each Poll waits for a value
// from it.
type fakePoller struct {
	name string
	gate chan struct{}

	mu         sync.Mutex
	running    int
	maxRunning int
	calls      int
}

func (f *fakePoller) Name() string { return f.name }

func (f *fakePoller) Poll(ctx context.Context) (Revision, Result, error) {
	f.mu.Lock()
	f.calls++
	f.running++
	if f.running > f.maxRunning {
		f.maxRunning = f.running
	}
	f.mu.Unlock()
	defer func() {
		f.mu.Lock()
		f.running--
		f.mu.Unlock()
	}()
	if f.gate != nil {
		select {
		case <-f.gate:
		case <-ctx.Done():
			return Revision{}, Result{}, ctx.Err()
		}
	}
	return Revision{Source: f.name, SHA: "abc"}, Result{Moved: Unchanged}, nil
}

type schedHarness struct {
	t      *testing.T
	clk    *clocktesting.FakeClock
	events chan Event
	sched  *Scheduler
	cancel context.CancelFunc
	done   chan error
}

var t0 = time.Date(2026, 11, 29, 10, 2, 0, 0, time.UTC)

func startScheduler(t *testing.T, jobs []Job) *schedHarness {
	t.Helper()
	return startSchedulerWith(t, jobs, func(*SchedulerOptions) {})
}

// startSchedulerWith starts a scheduler on a fake clock at t0 with a fixed
// 7s jitter and no start spread (every job polls at t0), after tweak has
// changed its options.
func startSchedulerWith(t *testing.T, jobs []Job, tweak func(*SchedulerOptions)) *schedHarness {
	t.Helper()
	h := &schedHarness{t: t, clk: clocktesting.NewFakeClock(t0), events: make(chan Event, 100), done: make(chan error, 1)}
	opts := SchedulerOptions{
		OnPoll:      func(e Event) { h.events <- e },
		Clock:       h.clk,
		Jitter:      func(d time.Duration) time.Duration { return 7 * time.Second },
		StartSpread: -1,
	}
	tweak(&opts)
	s, err := NewScheduler(jobs, opts)
	if err != nil {
		t.Fatal(err)
	}
	h.sched = s
	ctx, cancel := context.WithCancel(context.Background())
	h.cancel = cancel
	go func() { h.done <- s.Run(ctx) }()
	t.Cleanup(func() {
		cancel()
		select {
		case <-h.done:
		case <-time.After(30 * time.Second):
			t.Error("Run did not return after cancel")
		}
	})
	return h
}

// event waits (with a generous deadline) for the next event.
func (h *schedHarness) event() Event {
	h.t.Helper()
	select {
	case e := <-h.events:
		return e
	case <-time.After(30 * time.Second):
		h.t.Fatal("no poll event within 30s")
	}
	return Event{}
}

// waitTimers waits until n goroutines wait on the fake clock.
func (h *schedHarness) waitTimers(n int) {
	h.t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for h.clk.Waiters() != n {
		if time.Now().After(deadline) {
			h.t.Fatalf("clock has %d waiters, want %d", h.clk.Waiters(), n)
		}
		time.Sleep(time.Millisecond)
	}
}

func (h *schedHarness) noEvent() {
	h.t.Helper()
	select {
	case e := <-h.events:
		h.t.Fatalf("unexpected poll: %+v", e)
	default:
	}
}

type when struct {
	Cause   Cause
	Started time.Time
}

func TestSchedulerIntervalWithJitter(t *testing.T) {
	p := &fakePoller{name: "a"}
	h := startScheduler(t, []Job{{Poller: p, Interval: time.Minute}})
	var got []when
	e := h.event()
	got = append(got, when{e.Cause, e.Started})
	for i := 0; i < 2; i++ {
		h.waitTimers(1)
		h.clk.Step(time.Minute) // not yet: the jitter adds 7s
		h.waitTimers(1)
		h.noEvent()
		h.clk.Step(7 * time.Second)
		e = h.event()
		got = append(got, when{e.Cause, e.Started})
	}
	want := []when{
		{CauseStart, t0},
		{CauseSchedule, t0.Add(67 * time.Second)},
		{CauseSchedule, t0.Add(134 * time.Second)},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("polls (-want +got):\n%s", diff)
	}
}

func TestSchedulerCron(t *testing.T) {
	p := &fakePoller{name: "a"}
	h := startScheduler(t, []Job{{Poller: p, Schedule: "*/5 * * * *"}})
	if e := h.event(); e.Cause != CauseStart {
		t.Fatalf("first poll cause %s", e.Cause)
	}
	h.waitTimers(1)
	h.clk.Step(2*time.Minute + 59*time.Second) // 10:04:59
	h.waitTimers(1)
	h.noEvent()
	h.clk.Step(time.Second) // 10:05:00
	if e := h.event(); e.Cause != CauseSchedule || !e.Started.Equal(t0.Add(3*time.Minute)) {
		t.Errorf("poll = %s at %s, want schedule at 10:05", e.Cause, e.Started)
	}
	h.waitTimers(1)
	h.clk.Step(5 * time.Minute)
	if e := h.event(); !e.Started.Equal(t0.Add(8 * time.Minute)) {
		t.Errorf("poll at %s, want 10:10", e.Started)
	}
}

func TestSchedulerTriggerNeverOverlaps(t *testing.T) {
	p := &fakePoller{name: "a", gate: make(chan struct{})}
	other := &fakePoller{name: "b"}
	h := startScheduler(t, []Job{{Poller: p, Interval: time.Hour}, {Poller: other, Schedule: "@every 1h"}})
	if e := h.event(); e.Source != "b" {
		t.Fatalf("first event from %s, want b (a is blocked)", e.Source)
	}
	// Once a's first poll is running, triggers queue exactly one more poll.
	deadline := time.Now().Add(30 * time.Second)
	for {
		p.mu.Lock()
		running := p.running
		p.mu.Unlock()
		if running == 1 {
			break
		}
		if time.Now().After(deadline) {
			t.Fatal("a's first poll did not start")
		}
		time.Sleep(time.Millisecond)
	}
	for i := 0; i < 3; i++ {
		if err := h.sched.Trigger("a"); err != nil {
			t.Fatal(err)
		}
	}
	p.gate <- struct{}{}
	if e := h.event(); e.Source != "a" || e.Cause != CauseStart {
		t.Fatalf("event %s %s, want a start", e.Source, e.Cause)
	}
	p.gate <- struct{}{}
	if e := h.event(); e.Source != "a" || e.Cause != CauseManual {
		t.Fatalf("event %s %s, want a manual", e.Source, e.Cause)
	}
	h.waitTimers(2) // both wait for their next scheduled time
	h.noEvent()
	p.mu.Lock()
	calls, maxRunning := p.calls, p.maxRunning
	p.mu.Unlock()
	if calls != 2 || maxRunning != 1 {
		t.Errorf("a polled %d times with up to %d at once, want 2 and 1", calls, maxRunning)
	}

	// A trigger while idle polls at once, without waiting for the clock.
	if err := h.sched.Trigger("b"); err != nil {
		t.Fatal(err)
	}
	if e := h.event(); e.Source != "b" || e.Cause != CauseManual || !e.Started.Equal(t0) {
		t.Errorf("event %s %s at %s, want b manual at t0", e.Source, e.Cause, e.Started)
	}
	if err := h.sched.Trigger("nope"); err == nil {
		t.Error("Trigger of an unknown source succeeded")
	}
}

func TestSchedulerSpreadsFirstPolls(t *testing.T) {
	a, b, c, d := &fakePoller{name: "a"}, &fakePoller{name: "b"}, &fakePoller{name: "c"}, &fakePoller{name: "d"}
	// Four jobs, default StartSpread (30s): job i waits i/4 of
	// min(30s, its period). t0 is 10:02, so d's first cron run is 3m away.
	h := startSchedulerWith(t, []Job{
		{Poller: a, Interval: time.Minute},
		{Poller: b, Interval: time.Minute},      // 30s * 1/4
		{Poller: c, Interval: 12 * time.Second}, // 12s * 2/4
		{Poller: d, Schedule: "*/5 * * * *"},    // 30s * 3/4
	}, func(o *SchedulerOptions) { o.StartSpread = 0 })
	var got []string
	record := func() {
		e := h.event()
		got = append(got, e.Source+" "+string(e.Cause)+" +"+e.Started.Sub(t0).String())
	}
	record()
	for _, step := range []time.Duration{6 * time.Second, 1500 * time.Millisecond, 15 * time.Second} {
		h.waitTimers(4) // the polled jobs' next polls and the others' first
		h.noEvent()
		h.clk.Step(step)
		record()
	}
	want := []string{"a start +0s", "c start +6s", "b start +7.5s", "d start +22.5s"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("first polls (-want +got):\n%s", diff)
	}
}

func TestSchedulerTriggerDuringStartSpreadPollsAtOnce(t *testing.T) {
	a, b := &fakePoller{name: "a"}, &fakePoller{name: "b"}
	h := startSchedulerWith(t, []Job{{Poller: a, Interval: time.Minute}, {Poller: b, Interval: time.Minute}},
		func(o *SchedulerOptions) { o.StartSpread = 20 * time.Second }) // b waits 10s
	if e := h.event(); e.Source != "a" || e.Cause != CauseStart {
		t.Fatalf("first event %s %s, want a start", e.Source, e.Cause)
	}
	h.waitTimers(2)
	if err := h.sched.Trigger("b"); err != nil {
		t.Fatal(err)
	}
	if e := h.event(); e.Source != "b" || e.Cause != CauseManual || !e.Started.Equal(t0) {
		t.Fatalf("event %s %s at %s, want b manual at t0", e.Source, e.Cause, e.Started)
	}
	// The trigger replaced b's start poll: nothing more at +10s.
	h.waitTimers(2)
	h.clk.Step(10 * time.Second)
	h.waitTimers(2)
	h.noEvent()
	b.mu.Lock()
	calls := b.calls
	b.mu.Unlock()
	if calls != 1 {
		t.Errorf("b polled %d times by +10s, want 1", calls)
	}
}

func TestNewSchedulerValidates(t *testing.T) {
	a := &fakePoller{name: "a"}
	tests := map[string][]Job{
		"duplicate":     {{Poller: a, Interval: time.Minute}, {Poller: a, Interval: time.Minute}},
		"no schedule":   {{Poller: a}},
		"both":          {{Poller: a, Interval: time.Minute, Schedule: "@hourly"}},
		"bad cron":      {{Poller: a, Schedule: "@fortnightly"}},
		"nil poller":    {{Interval: time.Minute}},
		"negative ival": {{Poller: a, Interval: -time.Second}},
	}
	for name, jobs := range tests {
		t.Run(name, func(t *testing.T) {
			if _, err := NewScheduler(jobs, SchedulerOptions{OnPoll: func(Event) {}}); err == nil {
				t.Error("NewScheduler accepted invalid jobs")
			}
		})
	}
	if _, err := NewScheduler(nil, SchedulerOptions{}); err == nil {
		t.Error("NewScheduler accepted a nil OnPoll")
	}
}

func TestDefaultJitterStaysWithinTenPercent(t *testing.T) {
	s, err := NewScheduler(nil, SchedulerOptions{OnPoll: func(Event) {}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[time.Duration]bool{}
	for i := 0; i < 200; i++ {
		j := s.opts.Jitter(time.Minute)
		if j < 0 || j >= 6*time.Second {
			t.Fatalf("jitter %s outside [0, 6s)", j)
		}
		seen[j] = true
	}
	if len(seen) < 100 {
		t.Errorf("only %d distinct jitters in 200 draws; sources would poll in lockstep", len(seen))
	}
}

func TestSchedulerRunsRealSourceAndReportsErrors(t *testing.T) {
	u := newUpstream(t)
	sha := u.commit("one", nil)
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, gitSource(srv.url(), "main"))
	h := startScheduler(t, []Job{s.Job()})
	if e := h.event(); e.Err != nil || e.Revision.SHA != sha || e.Result.Moved != Updated {
		t.Fatalf("first event = %+v", e)
	}
	srv.Close()
	if err := h.sched.Trigger("src"); err != nil {
		t.Fatal(err)
	}
	e := h.event()
	var se *Error
	if !errors.As(e.Err, &se) || se.Kind != KindUnreachable {
		t.Errorf("event error = %v, want Unreachable", e.Err)
	}
}
