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
