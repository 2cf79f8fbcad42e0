package daemon_test

import (
	"encoding/json"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	dto "github.com/prometheus/client_model/go"
	clocktesting "k8s.io/utils/clock/testing"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// retriesByApp parses the daemon's JSON log: for each app, the delays of
// its "reconcile will be retried" lines, in order.
func retriesByApp(t *testing.T, log string) map[string][]time.Duration {
	t.Helper()
	out := map[string][]time.Duration{}
	for _, l := range strings.Split(strings.TrimSpace(log), "\n") {
		var line struct {
			Msg   string `json:"msg"`
			App   string `json:"app"`
			After string `json:"after"`
		}
		if err := json.Unmarshal([]byte(l), &line); err != nil || line.Msg != "reconcile will be retried" {
			continue
		}
		d, err := time.ParseDuration(line.After)
		if err != nil {
			t.Fatalf("log line %q: after: %v", l, err)
		}
		out[line.App] = append(out[line.App], d)
	}
	return out
}

// TestDaemonAppRetriesSpread runs eight apps that all fail (their path is
// not in the repository) on a fake clock and steps it through their
// retries: every delay is within the documented bounds (5 s doubling,
// capped at 5 min, plus at most 10%), and the apps' delays differ at every
// step, so apps that failed together (an API server restart) do not retry
// in lock-step.
func TestDaemonAppRetriesSpread(t *testing.T) {
	const apps, rounds = 8, 8
	repo := reconciletest.NewRepo(t)
	repo.Commit("one", map[string]string{"elsewhere/cm.yaml": reconciletest.ConfigMap("default", "blue")})
	var b strings.Builder
	fmt.Fprintf(&b, "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: file://%s\n    branch: main\n    interval: 1h\napps:\n", repo.Dir)
	for i := range apps {
		fmt.Fprintf(&b, "- name: app%d\n  source: repo\n  path: missing\n  namespace: default\n", i)
	}
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	if err := os.WriteFile(cfgPath, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	logs := &syncBuffer{}
	launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
		Logger:     slog.New(slog.NewJSONHandler(logs, nil)),
		Clock:      clk,
	})

	base := 5 * time.Second
	for round := 1; round <= rounds; round++ {
		var got map[string][]time.Duration
		reconciletest.Eventually(t, fmt.Sprintf("retry %d of every app", round), func() (bool, string) {
			got = retriesByApp(t, logs.String())
			for i := range apps {
				if len(got[fmt.Sprintf("app%d", i)]) < round {
					return false, fmt.Sprintf("retries so far: %v", got)
				}
			}
			return true, ""
		})
		distinct := map[time.Duration]bool{}
		longest := time.Duration(0)
		for app, delays := range got {
			if len(delays) != round {
				t.Fatalf("round %d: %s logged %d retries: %v", round, app, len(delays), delays)
			}
			dl := delays[round-1]
			if dl < base || dl > base+base/10 {
				t.Errorf("round %d: %s retries after %s, want within [%s, %s]", round, app, dl, base, base+base/10)
			}
			distinct[dl] = true
			longest = max(longest, dl)
		}
		if len(distinct) < apps/2 {
			t.Errorf("round %d: only %d distinct retry delays among %d apps: they retry in lock-step (%v)", round, len(distinct), apps, got)
		}
		// Every app logs its retry just before it waits on the clock:
		// wait for the apps' timers, the config check's ticker and the
		// hourly poll's timer, then step past every app's retry.
		reconciletest.Eventually(t, "every app waiting for its retry", func() (bool, string) {
			return clk.Waiters() == apps+2, fmt.Sprintf("%d clock waiters", clk.Waiters())
		})
		clk.Step(longest + time.Millisecond)
		base = min(2*base, 5*time.Minute)
	}
}

// TestDaemonPollOfFailingRevisionKeepsBackoff runs an app that fails (its
// path is not in the repository) from a source polled every 10 s, on a
// fake clock: the polls of the failing revision between its retries do
// not start the backoff over (5 s, 10 s, 20 s, 40 s, each plus at most
// 10%), and a new revision does (its failure retries after 5 s again).
func TestDaemonPollOfFailingRevisionKeepsBackoff(t *testing.T) {
	repo := reconciletest.NewRepo(t)
	repo.Commit("one", map[string]string{"elsewhere/cm.yaml": reconciletest.ConfigMap("default", "blue")})
	cfg := fmt.Sprintf("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: file://%s\n    branch: main\n    interval: 10s\napps:\n- name: broken\n  source: repo\n  path: missing\n  namespace: default\n", repo.Dir)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	clk := clocktesting.NewFakeClock(time.Now())
	logs := &syncBuffer{}
	metrics := daemon.NewMetrics(nil)
	launchDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Options:    reconcile.Options{CacheDir: t.TempDir()},
		Logger:     slog.New(slog.NewJSONHandler(logs, nil)),
		Clock:      clk,
		Metrics:    metrics,
	})
	// retry waits for the app's nth retry and returns its delay.
	retry := func(n int) time.Duration {
		t.Helper()
		var delays []time.Duration
		reconciletest.Eventually(t, fmt.Sprintf("retry %d", n), func() (bool, string) {
			delays = retriesByApp(t, logs.String())["broken"]
			return len(delays) >= n, fmt.Sprintf("retries so far: %v", delays)
		})
		if len(delays) != n {
			t.Fatalf("want %d retries, got %v: a poll of the failing revision ran the app", n, delays)
		}
		return delays[n-1]
	}
	// step waits for the app's retry timer, the config check's ticker
	// and the poll's timer, then moves the clock on by d.
	step := func(d time.Duration) {
		t.Helper()
		reconciletest.Eventually(t, "the app, the config check and the poll waiting", func() (bool, string) {
			return clk.Waiters() == 3, fmt.Sprintf("%d clock waiters", clk.Waiters())
		})
		clk.Step(d)
	}
	within := func(n int, got, base time.Duration) {
		t.Helper()
		if got < base || got > base+base/10 {
			t.Errorf("retry %d after %s, want within [%s, %s]", n, got, base, base+base/10)
		}
	}

	base := 5 * time.Second
	n := 1
	for ; n <= 4; n++ {
		got := retry(n)
		within(n, got, base)
		step(got + time.Millisecond)
		base *= 2
	}
	retry(n) // the fifth failure, of the same revision
	// The clock passed three polls' times after the first poll's.
	reconciletest.Eventually(t, "four polls of the failing revision", func() (bool, string) {
		polls := pollsOf(t, metrics, "repo")
		return polls >= 4, fmt.Sprintf("%d polls", polls)
	})
	retry(n) // none of them ran the app

	repo.Commit("two", map[string]string{"elsewhere/other.yaml": reconciletest.NamedConfigMap("default", "other", "red")})
	step(11 * time.Second) // past the next poll (10 s plus at most 10%), not the retry
	within(n+1, retry(n+1), 5*time.Second)
}

// pollsOf is how many polls of the source succeeded.
func pollsOf(t *testing.T, m *daemon.Metrics, src string) uint64 {
	t.Helper()
	var out dto.Metric
	if err := m.SourceFetch.WithLabelValues(src, "ok").(prometheus.Histogram).Write(&out); err != nil {
		t.Fatal(err)
	}
	return out.GetHistogram().GetSampleCount()
}
