package alert

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"golang.org/x/time/rate"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/utils/clock"
)

// t0 is the time every fake clock starts at.
var t0 = time.Date(2026, 11, 29, 23, 7, 5, 0, time.UTC)

// fakeClock is a clock.Clock whose timers fire at once: each wait is
// recorded and moves the clock forward by its duration, so tests see the
// delays asked for without waiting for them.
type fakeClock struct {
	mu    sync.Mutex
	now   time.Time
	waits []time.Duration
}

var _ clock.Clock = (*fakeClock)(nil)

func newFakeClock() *fakeClock { return &fakeClock{now: t0} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

func (c *fakeClock) Since(t time.Time) time.Duration { return c.Now().Sub(t) }

func (c *fakeClock) Step(d time.Duration) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.now = c.now.Add(d)
}

func (c *fakeClock) After(d time.Duration) <-chan time.Time { return c.NewTimer(d).C() }

func (c *fakeClock) NewTimer(d time.Duration) clock.Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.waits = append(c.waits, d)
	c.now = c.now.Add(d)
	ch := make(chan time.Time, 1)
	ch <- c.now
	return firedTimer{ch}
}

func (c *fakeClock) Sleep(d time.Duration) { <-c.After(d) }

func (c *fakeClock) Tick(d time.Duration) <-chan time.Time { return c.After(d) }

// Waits returns the delays waited for so far.
func (c *fakeClock) Waits() []time.Duration {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]time.Duration(nil), c.waits...)
}

type firedTimer struct{ c chan time.Time }

func (t firedTimer) C() <-chan time.Time { return t.c }
func (t firedTimer) Stop() bool          { return false }
func (t firedTimer) Reset(time.Duration) bool {
	return false
}

// request is one request a test server received.
type request struct {
	Path   string
	Header http.Header
	Body   []byte
}

// recorder is a loopback HTTP server that records requests and answers
// each with the next response from its script (200 once the script is
// used up).
type recorder struct {
	*httptest.Server
	mu       sync.Mutex
	reqs     []request
	script   []response
	handler  func(w http.ResponseWriter, r *http.Request, body []byte) bool
	received chan struct{}
}

type response struct {
	code   int
	header map[string]string
	body   string
}

func newRecorder(t testing.TB, script ...response) *recorder {
	t.Helper()
	rec := &recorder{script: script, received: make(chan struct{}, 1000)}
	rec.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, err := io.ReadAll(r.Body)
		if err != nil {
			t.Errorf("read request body: %v", err)
		}
		rec.mu.Lock()
		rec.reqs = append(rec.reqs, request{Path: r.URL.Path, Header: r.Header.Clone(), Body: body})
		var resp response
		if len(rec.script) > 0 {
			resp, rec.script = rec.script[0], rec.script[1:]
		} else {
			resp = response{code: http.StatusOK, body: "ok"}
		}
		h := rec.handler
		rec.mu.Unlock()
		rec.received <- struct{}{}
		if h != nil && h(w, r, body) {
			return
		}
		for k, v := range resp.header {
			w.Header().Set(k, v)
		}
		w.WriteHeader(resp.code)
		_, _ = io.WriteString(w, resp.body)
	}))
	t.Cleanup(rec.Close)
	return rec
}

func (r *recorder) Requests() []request {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]request(nil), r.reqs...)
}

// secretURLPath is the part of a webhook URL that is the provider's secret;
// tests check it never shows up in errors.
const secretURLPath = "/services/T000/B000/XXXXsecretXXXX"

// writeFile writes content to a new file in dir and returns its path.
func writeFile(t testing.TB, dir, name, content string) string {
	t.Helper()
	p := filepath.Join(dir, name)
	if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
		t.Fatal(err)
	}
	return p
}

// testAlert returns an alert of type typ whose URL file points at url.
func testAlert(t testing.TB, name string, typ SinkType, url string, events ...string) Sink {
	t.Helper()
	dir := t.TempDir()
	a := Sink{Name: name, Type: typ, URLFile: writeFile(t, dir, "url", url+"\n"), Events: events}
	if typ == SinkWebhook {
		a.HMACKeyFile = writeFile(t, dir, "key", testKey+"\n")
	}
	return a
}

const testKey = "s3cr3t-hmac-key"

// testOptions are deterministic options: fake clock, no jitter, no rate
// limit unless a test sets one.
func testOptions(clk *fakeClock) Options {
	return Options{
		Clock:     clk,
		RateLimit: rate.Inf,
		Backoff:   wait.Backoff{Duration: time.Second, Factor: 2, Cap: time.Minute},
	}
}

func mustNew(t *testing.T, alerts []Sink, opts Options) *Notifier {
	t.Helper()
	n, err := New(alerts, opts)
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	t.Cleanup(func() { _ = n.Close(context.Background()) })
	return n
}

// closeNotifier drains n: after it returns every queued alert was sent or
// given up on.
func closeNotifier(t *testing.T, n *Notifier) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	if err := n.Close(ctx); err != nil {
		t.Fatalf("Close: %v", err)
	}
}

// refusedURL returns a loopback URL on which nothing listens.
func refusedURL(t *testing.T) string {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := l.Addr().String()
	l.Close()
	return "http://" + addr + secretURLPath
}

// driftRevision is the commit the drift examples were found at.
const driftRevision = "5d0f3a8e21c94b7a6e3f0d1c2b9a8e7f6d5c4b3a"

// driftEvent is the alert the daemon sends for the two Deployment findings
// of the real report in docs/drift.md (TestReportExample against the test
// control plane): hpa-controller wrote .spec.replicas through /scale (the
// server recorded no time for that entry) and kubectl-edit changed the
// image; both fields are taken-over. Summary and revision are what the
// daemon fills in (findingEvent).
func driftEvent() Event {
	return Event{
		Type:     EventDrift,
		App:      "web",
		Revision: driftRevision,
		Object:   ObjectRef{APIVersion: "apps/v1", Kind: "Deployment", Namespace: "testreportexample-1", Name: "web"},
		Summary:  "2 field(s) of Deployment testreportexample-1/web drifted from Git",
		Fields: []Field{
			{
				Path: ".spec.replicas", Class: "taken-over", Desired: "2", Live: "5",
				Culprit: Culprit{Manager: "hpa-controller", Operation: "Update", Subresource: "scale"},
			},
			{
				Path: ".spec.template.spec.containers[name=\"app\"].image", Class: "taken-over",
				Desired: "example.com/web:v1.4", Live: "example.com/web:v1.5-hotfix",
				Culprit: Culprit{Manager: "kubectl-edit", Operation: "Update", Time: t0.Add(-time.Second)},
			},
		},
		Time: t0,
	}
}

// resolvedDriftEvent is driftEvent cleared: a later commit was applied
// and the daemon took both fields back.
func resolvedDriftEvent() Event {
	ev := driftEvent()
	ev.Resolved = true
	ev.Summary = "Deployment testreportexample-1/web matches Git again"
	ev.Revision = "9e1b7c4d02f5a6b8c3d9e0f1a2b3c4d5e6f7a8b9"
	ev.Time = t0.Add(42 * time.Minute)
	return ev
}
