package daemon_test

import (
	"fmt"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// TestDaemonSourceRetryStatus: a source on an hourly interval whose Git
// server goes down is retried with backoff (after 5s, then 10s) instead of
// waiting the hour; /status and the metrics show the consecutive failures
// and when the next retry comes, and a successful poll clears both.
func TestDaemonSourceRetryStatus(t *testing.T) {
	rig := newFaultRig(t, rigOptions{interval: "1h", maxBackoff: time.Second, files: func(ns string) map[string][]byte {
		return map[string][]byte{"app/cms.yaml": []byte(configMaps(ns, "cm", 1, "1"))}
	}})
	reconciletest.Eventually(t, "first commit applied", func() (bool, string) { return rig.converged(want(nil, "cm", 1, "1"), rig.first) })
	failures := func() float64 { return testutil.ToFloat64(rig.metrics.SourceFailures.WithLabelValues("repo")) }
	nextPoll := func() float64 { return testutil.ToFloat64(rig.metrics.SourceNextPoll.WithLabelValues("repo")) }
	if f := failures(); f != 0 {
		t.Fatalf("syncd_source_consecutive_failures = %v after a good poll, want 0", f)
	}

	rig.srv.SetDown(true)
	reqs0 := rig.srv.Requests()
	triggered := time.Now()
	if err := rig.d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "first failure in /status", func() (bool, string) {
		s := rig.status()
		return s.SourceFailures == 1, fmt.Sprintf("%+v", s)
	})
	seen1 := time.Now()
	s1 := rig.status()
	perPoll := rig.srv.Requests() - reqs0
	// The retry is RetryBase (5s) plus at most 10% jitter after the poll.
	if s1.SourceRetry.Before(triggered.Add(5*time.Second)) || s1.SourceRetry.After(seen1.Add(5500*time.Millisecond)) {
		t.Errorf("sourceRetry = %s, want 5s to 5.5s after the failed poll (between %s and %s)", s1.SourceRetry, triggered.Add(5*time.Second), seen1.Add(5500*time.Millisecond))
	}
	if f, n := failures(), nextPoll(); f != 1 || n != float64(s1.SourceRetry.Unix()) {
		t.Errorf("metrics: consecutive failures %v, next poll %v; want 1 and %d", f, n, s1.SourceRetry.Unix())
	}

	// No trigger: the backoff retries on its own, long before the hour,
	// and the down server sees nothing in between.
	reconciletest.Eventually(t, "second failure from the backoff", func() (bool, string) {
		s := rig.status()
		return s.SourceFailures == 2, fmt.Sprintf("%+v", s)
	})
	seen2 := time.Now()
	s2 := rig.status()
	if got := rig.srv.Requests() - reqs0; got != 2*perPoll {
		t.Errorf("down server saw %d requests for 2 failed polls, want %d", got, 2*perPoll)
	}
	if s2.SourceRetry.Before(s1.SourceRetry.Add(10*time.Second)) || s2.SourceRetry.After(seen2.Add(11*time.Second)) {
		t.Errorf("sourceRetry after the second failure = %s, want 10s to 11s after it (between %s and %s)", s2.SourceRetry, s1.SourceRetry.Add(10*time.Second), seen2.Add(11*time.Second))
	}

	rig.srv.SetDown(false)
	if err := rig.d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "success clears the failures", func() (bool, string) {
		s := rig.status()
		return s.SourceFailures == 0 && s.SourceRetry.IsZero() && failures() == 0, fmt.Sprintf("%+v metric=%v", s, failures())
	})
}
