package e2e

import (
	"fmt"
	"strconv"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyMemoryLimit: `syncd run` sets its Go memory limit and its
// collector target (GOGC 50) at start and logs both; a GOMEMLIMIT or a
// GOGC in its environment wins and is logged as the source. Without one, it logs the limit it took
// from the container, or that there is none (this machine's cgroup may set
// no memory limit).
func TestJourneyMemoryLimit(t *testing.T) {
	w := newWorkspace(t)
	ensureNamespace(t, "memlimit-e2e")
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "memlimit")
	if _, err := repo.Commit("one map", map[string][]byte{"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: limited}\ndata: {a: b}\n")}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: limited
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: limited
    source: limited
    path: app
    namespace: memlimit-e2e
`, repo.URL))

	d := w.startDaemon()
	if d.logged("Go memory limit", "source") != "cgroup" && d.logged("Go memory limit: none (no container memory limit and no GOMEMLIMIT)", "source") != "none" {
		t.Errorf("syncd run did not log its Go memory limit at start (a \"Go memory limit\" line from the cgroup, or \"Go memory limit: none\"):\n%s", d.logText())
	}
	if got := d.logged("Go collector target", "source"); got != "syncd run" || d.logged("Go collector target", "gcPercent") != "50" {
		t.Errorf("syncd run did not log its collector target, 50 set by syncd run:\n%s", d.logText())
	}
	d.stop()

	t.Setenv("GOMEMLIMIT", "300MiB")
	t.Setenv("GOGC", "80")
	d = w.startDaemon()
	if got := d.logged("Go memory limit", "source"); got != "GOMEMLIMIT" {
		t.Errorf("with GOMEMLIMIT=300MiB, the logged source is %q, want GOMEMLIMIT:\n%s", got, d.logText())
	}
	limit, err := strconv.ParseFloat(d.logged("Go memory limit", "limitBytes"), 64)
	if err != nil || limit != 300<<20 {
		t.Errorf("with GOMEMLIMIT=300MiB, limitBytes is %v (%v), want %d:\n%s", limit, err, 300<<20, d.logText())
	}
	if got := d.logged("Go collector target", "source"); got != "GOGC" || d.logged("Go collector target", "gcPercent") != "80" {
		t.Errorf("with GOGC=80, the logged collector target is %s from %q, want 80 from GOGC:\n%s", d.logged("Go collector target", "gcPercent"), got, d.logText())
	}
	d.waitApplied("limited", func(string) bool { return true })
}
