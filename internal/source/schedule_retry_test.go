package source

import (
	"errors"
	"path/filepath"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

func TestSchedulerRetryDelays(t *testing.T) {
	tests := map[string]struct {
		job    Job
		jitter time.Duration
		// want[i] is the delay after i consecutive failures (want[0]: after
		// a success).
		want []time.Duration
	}{
		"long interval: doubling, capped at RetryMax": {
			job:  Job{Interval: time.Hour},
			want: []time.Duration{time.Hour, 5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute, time.Minute},
		},
		"short interval caps the backoff": {
			job:  Job{Interval: 30 * time.Second},
			want: []time.Duration{30 * time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second, 30 * time.Second, 30 * time.Second},
		},
		"daily cron: capped at RetryMax": {
			job:  Job{Schedule: "0 3 * * *"}, // t0 is 10:02
			want: []time.Duration{16*time.Hour + 58*time.Minute, 5 * time.Second, 10 * time.Second, 20 * time.Second, 40 * time.Second, time.Minute, time.Minute},
		},
		"frequent cron caps the backoff": {
			job:  Job{Schedule: "@every 15s"},
			want: []time.Duration{15 * time.Second, 5 * time.Second, 10 * time.Second, 15 * time.Second, 15 * time.Second},
		},
		"the interval's jitter is not a retry's": {
			job:    Job{Interval: time.Hour},
			jitter: 2 * time.Second,
			want:   []time.Duration{time.Hour + 2*time.Second, 5 * time.Second, 10 * time.Second, 20 * time.Second},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.job.Poller = &fakePoller{name: "a"}
			s, err := NewScheduler([]Job{tc.job}, SchedulerOptions{
				OnPoll:      func(Event) {},
				Jitter:      func(time.Duration) time.Duration { return tc.jitter },
				RetryBase:   5 * time.Second,
				RetryMax:    time.Minute,
				RetryJitter: -1,
			})
			if err != nil {
				t.Fatal(err)
			}
			j := &s.jobs[0]
			got := []time.Duration{s.next(j, t0, 0).Sub(t0)}
			for range len(tc.want) - 1 {
				got = append(got, s.next(j, t0, j.backoff.Step()).Sub(t0))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("delay after n failures (-want +got):\n%s", diff)
			}
		})
	}
}

func TestSchedulerRetryDelayNeverOverflows(t *testing.T) {
	s, err := NewScheduler(nil, SchedulerOptions{OnPoll: func(Event) {}})
	if err != nil {
		t.Fatal(err)
	}
	b := s.newBackoff()
	for n := 1; n <= 100000; n++ {
		d := b.Step()
		if d < 5*time.Second || d > 5*time.Minute*11/10 {
			t.Fatalf("retry delay after %d failures = %s, want within the defaults [5s, 5m] plus at most 10%%", n, d)
		}
	}
}

func TestNewSchedulerValidatesRetry(t *testing.T) {
	_, err := NewScheduler(nil, SchedulerOptions{OnPoll: func(Event) {}, RetryBase: time.Minute, RetryMax: time.Second})
	if err == nil {
		t.Fatal("NewScheduler accepted RetryMax below RetryBase")
	}
	if want := "SchedulerOptions.RetryMax (1s) must not be below RetryBase (1m0s)"; !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not say %q", err, want)
	}
}

// gitServerSource serves a repository with one commit on its own loopback
// Git server and returns the server and a Source following its main branch.
func gitServerSource(t *testing.T, name string, interval time.Duration) (*gitserver.Server, *gitserver.Repo, *Source) {
	t.Helper()
	dir := t.TempDir()
	srv, err := gitserver.Start(filepath.Join(dir, "srv"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := srv.NewRepo("repo", filepath.Join(dir, "work"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("one", map[string][]byte{"cm.yaml": []byte("kind: ConfigMap\n")}); err != nil {
		t.Fatal(err)
	}
	s, err := New(Spec{Name: name, URL: repo.URL, Branch: "main", Interval: interval},
		Options{CacheDir: filepath.Join(dir, "cache")})
	if err != nil {
		t.Fatal(err)
	}
	return srv, repo, s
}

// polled is one poll as the test sees it: offsets from t0.
type polled struct {
	At       time.Duration
	Source   string
	Failures int
	Next     time.Duration
	OK       bool
}

func TestSchedulerBacksOffDownGitServer(t *testing.T) {
	downSrv, _, down := gitServerSource(t, "down", time.Hour)
	healthySrv, _, healthy := gitServerSource(t, "healthy", 5*time.Minute)
	downSrv.SetDown(true)
	h := startSchedulerWith(t, []Job{down.Job(), healthy.Job()}, func(o *SchedulerOptions) {
		o.Jitter = func(time.Duration) time.Duration { return 0 }
		o.RetryJitter = -1
		o.RetryBase = 5 * time.Second
		o.RetryMax = time.Minute
	})
	var got []polled
	record := func(n int) {
		t.Helper()
		var batch []polled
		for range n {
			e := h.event()
			if e.Source == "down" && e.Err != nil {
				var se *Error
				if !errors.As(e.Err, &se) {
					t.Errorf("down: error %v is not a *source.Error", e.Err)
				}
			}
			if e.Source == "healthy" && e.Err != nil {
				t.Errorf("healthy source failed: %v", e.Err)
			}
			batch = append(batch, polled{e.Started.Sub(t0), e.Source, e.Failures, e.Next.Sub(t0), e.Err == nil})
		}
		sort.Slice(batch, func(i, j int) bool { return batch[i].Source < batch[j].Source })
		got = append(got, batch...)
	}
	record(2)
	perPoll := downSrv.Requests()
	if perPoll == 0 {
		t.Fatal("the down server saw no request for the first poll")
	}
	t.Logf("one failed poll = %d request(s) to the down server", perPoll)
	failedPolls := int64(1)
	healthyReqs := healthySrv.Requests()

	// advance steps the clock to just before at, checks nobody polls (and
	// the down server gets no request), then steps to at and records n
	// polls.
	now := time.Duration(0)
	advance := func(at time.Duration, n int) {
		t.Helper()
		h.waitTimers(2)
		h.clk.Step(at - time.Second - now)
		h.waitTimers(2)
		h.noEvent()
		if r := downSrv.Requests(); r != failedPolls*perPoll {
			t.Fatalf("before %s: down server saw %d requests, want %d (%d failed polls × %d)", at, r, failedPolls*perPoll, failedPolls, perPoll)
		}
		h.clk.Step(time.Second)
		now = at
		record(n)
	}
	// The down source retries after 5s, 10s, 20s, 40s, then every minute;
	// the healthy one polls on its 5m interval all along.
	for _, at := range []time.Duration{5, 15, 35, 75, 135, 195, 255} {
		advance(at*time.Second, 1)
		failedPolls++
	}
	if r := healthySrv.Requests(); r != healthyReqs {
		t.Errorf("healthy server saw %d requests before its interval, want %d", r, healthyReqs)
	}
	advance(300*time.Second, 1)
	advance(315*time.Second, 1)
	failedPolls++

	// The server comes back: the next retry succeeds and resets the
	// backoff, so the source is back on its hourly interval.
	downSrv.SetDown(false)
	advance(375*time.Second, 1)

	// A new failure starts again at RetryBase.
	downSrv.SetDown(true)
	if err := h.sched.Trigger("down"); err != nil {
		t.Fatal(err)
	}
	record(1)
	afterRecovery := downSrv.Requests()
	failedPolls = 0
	h.waitTimers(2)
	h.clk.Step(4 * time.Second)
	h.waitTimers(2)
	h.noEvent()
	if r := downSrv.Requests(); r != afterRecovery {
		t.Errorf("down server polled %d times within 4s of a failure, want none", r-afterRecovery)
	}
	h.clk.Step(time.Second)
	record(1)

	s := time.Second
	want := []polled{
		{0, "down", 1, 5 * s, false},
		{0, "healthy", 0, 300 * s, true},
		{5 * s, "down", 2, 15 * s, false},
		{15 * s, "down", 3, 35 * s, false},
		{35 * s, "down", 4, 75 * s, false},
		{75 * s, "down", 5, 135 * s, false},
		{135 * s, "down", 6, 195 * s, false},
		{195 * s, "down", 7, 255 * s, false},
		{255 * s, "down", 8, 315 * s, false},
		{300 * s, "healthy", 0, 600 * s, true},
		{315 * s, "down", 9, 375 * s, false},
		{375 * s, "down", 0, 375*s + time.Hour, true},
		{375 * s, "down", 1, 380 * s, false}, // manual trigger
		{380 * s, "down", 2, 390 * s, false},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("polls (-want +got):\n%s", diff)
	}
}
