package daemon_test

import (
	"context"
	"fmt"
	"net/http"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// startDaemon runs a daemon with opts (a private cache directory and a
// discarding logger unless set) until the test ends, and waits for its
// first reconcile.
func startDaemon(t *testing.T, opts daemon.Options) *daemon.Daemon {
	t.Helper()
	if opts.CacheDir == "" {
		opts.CacheDir = t.TempDir()
	}
	d := launchDaemon(t, opts)
	reconciletest.Eventually(t, "first reconcile", func() (bool, string) { return d.Ready(), fmt.Sprintf("%+v", d.Status()) })
	return d
}

// forcedWrites counts the forced server-side applies (not dry runs) a
// client sent to one object.
type forcedWrites struct {
	mu     sync.Mutex
	object string // "configmaps/NAME"
	n      int
}

func (f *forcedWrites) observe(req *http.Request) {
	q := req.URL.Query()
	if req.Method != http.MethodPatch || objectOfPath(req.URL.Path) != f.object || q.Get("force") != "true" || q.Has("dryRun") {
		return
	}
	f.mu.Lock()
	f.n++
	f.mu.Unlock()
}

func (f *forcedWrites) count() int {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.n
}

// TestDaemonFlapping: the app forces its conflicts and another writer
// ("fighter") force-applies .data.color in a loop, each write followed by
// a daemon reconcile. After enough owner flips the daemon publishes a
// flapping finding and a flapping alert, and its next reconciles leave the
// field to the fighter (no forced write, the fighter's value stays, the
// app reports the conflict). A config change starts a new generation,
// which forces the field again.
func TestDaemonFlapping(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, "  conflicts:\n    default: force\n"+h.config())

	forced := &forcedWrites{object: "configmaps/settings"}
	reqs := &requests{before: forced.observe}
	metrics := daemon.NewMetrics(nil)
	d := startDaemon(t, daemon.Options{
		ConfigPath:  cfgPath,
		Cluster:     reconciletest.Cluster(t, reqs.wrap(env.Config)),
		Metrics:     metrics,
		ConfigCheck: 200 * time.Millisecond,
		MaxBackoff:  time.Hour,
	})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	color := func() string {
		cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return cm.Data["color"]
	}
	status := func() daemon.AppStatus { return d.Status()[0] }
	reconciletest.Eventually(t, "first revision applied", func() (bool, string) {
		return status().Result == "ok" && color() == "blue", fmt.Sprintf("color=%s status=%+v", color(), status())
	})
	if n := forced.count(); n != 0 {
		t.Fatalf("the first apply forced %d write(s); there was nothing to force", n)
	}
	fight := func() {
		t.Helper()
		force := true
		_, err := cms.Patch(context.Background(), "settings", types.ApplyPatchType,
			[]byte(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"color":"green"}}`),
			metav1.PatchOptions{FieldManager: "fighter", Force: &force})
		if err != nil {
			t.Fatal(err)
		}
	}
	// reconcile triggers a poll and waits until a reconcile finished.
	reconcileNow := func() daemon.AppStatus {
		t.Helper()
		prev := status().LastRun
		if err := d.Trigger("repo"); err != nil {
			t.Fatal(err)
		}
		reconciletest.Eventually(t, "a reconcile after the trigger", func() (bool, string) {
			s := status()
			return !s.LastRun.Equal(prev), fmt.Sprintf("status=%+v", s)
		})
		return status()
	}

	// Fight until the daemon stops forcing. Every round is two owner
	// flips (fighter, then syncd forcing back); the detector's default
	// threshold is 4 flips, so the third round at the latest must find
	// the field flapping. A few more rounds allow for a watch event the
	// watcher saw only after the next reconcile decided.
	rounds := 0
	for {
		rounds++
		if rounds > 6 {
			t.Fatalf("after %d rounds the daemon still forces .data.color (%d forced writes); alerts=%+v", rounds-1, forced.count(), h.alerts())
		}
		before := forced.count()
		fight()
		s := reconcileNow()
		if s.Result == "conflicts" {
			break
		}
		if s.Result != "ok" || forced.count() != before+1 || color() != "blue" {
			t.Fatalf("round %d: status=%+v forced writes %d→%d color=%s, want ok, one forced write, blue", rounds, s, before, forced.count(), color())
		}
	}
	if s := status(); !strings.Contains(s.Error, "fighter") || !strings.Contains(s.Error, ".data.color") {
		t.Errorf("status error = %q, want the conflict with fighter on .data.color", s.Error)
	}
	t.Logf("the daemon stopped forcing in round %d, after %d forced writes", rounds, forced.count())

	// flappingField returns the flapping .data.color field of an open
	// alert. The alert may carry the field's taken-over finding too: the
	// debounce can fold syncd's write and the fighter's next one.
	flappingField := func(p alert.WebhookPayload) (alert.WebhookField, bool) {
		for _, f := range p.Fields {
			if p.State == "open" && f.Path == ".data.color" && f.Class == "flapping" {
				return f, true
			}
		}
		return alert.WebhookField{}, false
	}
	flapping := func(p alert.WebhookPayload) bool {
		_, ok := flappingField(p)
		return ok
	}
	reconciletest.Eventually(t, "flapping finding and alert published", func() (bool, string) {
		_, ok := h.find(0, flapping)
		n := testutil.ToFloat64(metrics.DriftFindings.WithLabelValues("web", "local", "flapping"))
		return ok && n == 1, fmt.Sprintf("flapping findings=%v alerts=%+v", n, h.alerts())
	})
	at, _ := h.find(0, flapping)
	p := h.alerts()[at]
	if f, _ := flappingField(p); p.App != "web" || p.Object.Name != "settings" || f.Desired != "blue" || f.Culprit == nil || f.Culprit.Manager != "fighter" {
		t.Errorf("flapping alert = %+v (field %+v, culprit %+v), want app web, ConfigMap settings, desired blue, culprit fighter", p, f, f.Culprit)
	}

	// The daemon no longer forces the field: the fighter's value stays
	// through more rounds of fighting and reconciling.
	stopped := forced.count()
	for i := range 2 {
		fight()
		s := reconcileNow()
		if s.Result != "conflicts" || color() != "green" {
			t.Errorf("round %d after flapping: status=%+v color=%s, want conflicts and the fighter's green kept", i+1, s, color())
		}
	}
	if n := forced.count(); n != stopped {
		t.Errorf("after flapping the daemon forced .data.color %d more time(s), want none", n-stopped)
	}

	// A config change (a new generation, a new flap detector): forcing
	// resumes, Git's value is back and the flapping finding is gone.
	appendFile(t, cfgPath, "# the fight was looked at\n")
	reconciletest.Eventually(t, "forcing resumed after the config change", func() (bool, string) {
		s := status()
		n := testutil.ToFloat64(metrics.DriftFindings.WithLabelValues("web", "local", "flapping"))
		return forced.count() > stopped && color() == "blue" && s.Result == "ok" && n == 0,
			fmt.Sprintf("forced writes=%d (were %d) color=%s flapping findings=%v status=%+v", forced.count(), stopped, color(), n, s)
	})
}
