package daemon_test

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/egress"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// hangingServer accepts connections and never answers; it counts them.
type hangingServer struct {
	l     net.Listener
	mu    sync.Mutex
	conns []net.Conn
}

func startHangingServer(t *testing.T) *hangingServer {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &hangingServer{l: l}
	go func() {
		for {
			c, err := l.Accept()
			if err != nil {
				return
			}
			s.mu.Lock()
			s.conns = append(s.conns, c)
			s.mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		l.Close()
		s.mu.Lock()
		defer s.mu.Unlock()
		for _, c := range s.conns {
			c.Close()
		}
	})
	return s
}

func (s *hangingServer) accepted() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.conns)
}

// closedPort returns a loopback address nothing listens on.
func closedPort(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return addr
}

// gathered returns the sum of the counter name over the series of reg
// that have the given labels (0 when none was counted).
func gathered(t *testing.T, reg prometheus.Gatherer, name string, labels map[string]string) float64 {
	t.Helper()
	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	sum := 0.0
	for _, mf := range mfs {
		if mf.GetName() != name {
			continue
		}
	metrics:
		for _, m := range mf.GetMetric() {
			got := map[string]string{}
			for _, lp := range m.GetLabel() {
				got[lp.GetName()] = lp.GetValue()
			}
			for k, v := range labels {
				if got[k] != v {
					continue metrics
				}
			}
			sum += m.GetCounter().GetValue()
		}
	}
	return sum
}

// TestDaemonSinkDown: the app's alert sinks are down, one refusing
// connections (a closed loopback port) and one accepting them and never
// answering. Every reconcile still completes, applies its revision and
// reports ok; the alerts are attempted, and each sink's failure is
// counted in syncd_alerts_failed_total once its retries are spent.
func TestDaemonSinkDown(t *testing.T) {
	ns := env.Namespace(t)
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, "blue")})
	hang := startHangingServer(t)
	dir := t.TempDir()
	urls := map[string]string{
		"refused": "http://" + closedPort(t) + "/services/T000/B000/refused",
		"hanging": "http://" + hang.l.Addr().String() + "/api/webhooks/1/hanging",
	}
	for name, u := range urls {
		if err := os.WriteFile(filepath.Join(dir, name), []byte(u), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath := filepath.Join(dir, "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1h")
	appendFile(t, cfgPath, "alerts:\n"+
		"- name: refused\n  type: slack\n  urlFile: refused\n"+
		"- name: hanging\n  type: discord\n  urlFile: hanging\n")

	reg := prometheus.NewRegistry()
	d := startDaemon(t, daemon.Options{
		ConfigPath: cfgPath,
		Cluster:    cluster(t),
		Registerer: reg,
		MaxBackoff: time.Hour,
		// A second per attempt instead of the notifier's 10 s: the hanging
		// sink's five attempts then take seconds, not a minute.
		AlertClient: &http.Client{Transport: egress.Transport(), Timeout: time.Second},
	})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	color := func() string {
		cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return cm.Data["color"]
	}
	// Each revision is applied and reported ok while the sinks keep
	// failing; every reconcile that writes queues a sync alert.
	for i, c := range []string{"blue", "green", "teal"} {
		if i > 0 {
			repo.Commit(c, map[string]string{"app/cm.yaml": reconciletest.ConfigMap(ns, c)})
			if err := d.Trigger("repo"); err != nil {
				t.Fatal(err)
			}
		}
		sha := repo.Head()
		reconciletest.Eventually(t, c+" applied", func() (bool, string) {
			st := d.Status()
			return len(st) == 1 && st[0].Revision == sha && st[0].Result == "ok" && st[0].Objects == 1 && st[0].Error == "" && color() == c,
				fmt.Sprintf("color=%s status=%+v", color(), st)
		})
	}
	reconciletest.Eventually(t, "the hanging sink was reached", func() (bool, string) {
		return hang.accepted() > 0, "no connection accepted"
	})

	// A refused connection fails fast but is retried with backoff (about
	// 15 s); a request nobody answers times out after the client's second
	// per attempt, five attempts. Allow well over both.
	failed := func(sink string) float64 {
		return gathered(t, reg, "syncd_alerts_failed_total", map[string]string{"sink": sink, "reason": "network"})
	}
	deadline := time.Now().Add(5 * time.Minute)
	for failed("refused") < 1 || failed("hanging") < 1 {
		if time.Now().After(deadline) {
			t.Fatalf("alert failures not counted: refused=%v hanging=%v", failed("refused"), failed("hanging"))
		}
		time.Sleep(200 * time.Millisecond)
	}
	if n := gathered(t, reg, "syncd_alerts_sent_total", nil); n != 0 {
		t.Errorf("syncd_alerts_sent_total = %v with every sink down, want 0", n)
	}
	if st := d.Status(); st[0].Result != "ok" || color() != "teal" {
		t.Errorf("after the alert failures: status=%+v color=%s, want ok and teal", st, color())
	}
}
