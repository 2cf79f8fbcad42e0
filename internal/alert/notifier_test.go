package alert

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// sent is what a test reads back from a webhook request.
type sent struct {
	Type, State, Revision string
	Paths                 []string
}

func summarise(t *testing.T, reqs []request) []sent {
	t.Helper()
	var out []sent
	for _, r := range reqs {
		var p webhookSchema
		decodeStrict(t, r.Body, &p)
		s := sent{Type: p.Type, State: p.State, Revision: p.Revision}
		for _, f := range p.Fields {
			s.Paths = append(s.Paths, f.Path)
		}
		out = append(out, s)
	}
	return out
}

func TestDedupeAndResolve(t *testing.T) {
	drift := driftEvent()
	resolved := func(ev Event) Event { ev.Resolved = true; return ev }
	reversed := driftEvent()
	reversed.Fields[0], reversed.Fields[1] = reversed.Fields[1], reversed.Fields[0]
	reversed.Summary, reversed.Revision = "same finding, later revision", "0c1d2e3f4a5b6c7d8e9f0a1b2c3d4e5f6a7b8c9d"
	otherCulprit := driftEvent()
	otherCulprit.Fields[0].Culprit.Manager = "keda-operator"
	otherClass := driftEvent()
	otherClass.Fields[0].Class = "shared"
	replicasOnly := driftEvent()
	replicasOnly.Fields = replicasOnly.Fields[:1]
	conflict := driftEvent()
	conflict.Type = EventConflict
	objectWide := Event{Type: EventDrift, App: drift.App, Object: drift.Object, Resolved: true, Summary: "object matches Git"}
	sync := func(rev string) Event { return Event{Type: EventSync, App: "shop", Revision: rev} }
	driftPaths := []string{".spec.replicas", `.spec.template.spec.containers[name="app"].image`}
	open := sent{Type: "drift", State: "open", Revision: drift.Revision, Paths: driftPaths}
	closed := sent{Type: "drift", State: "resolved", Revision: drift.Revision, Paths: driftPaths}

	type step struct {
		advance time.Duration // clock moves before the event
		ev      Event
	}
	tests := map[string]struct {
		steps          []step
		want           []sent
		wantSuppressed float64
	}{
		"same finding twice is sent once": {
			steps: []step{{ev: drift}, {ev: drift}}, want: []sent{open}, wantSuppressed: 1,
		},
		"field order, summary and revision do not make a new finding": {
			steps: []step{{ev: drift}, {ev: reversed}}, want: []sent{open}, wantSuppressed: 1,
		},
		"another culprit is a new finding": {
			steps: []step{{ev: drift}, {ev: otherCulprit}}, want: []sent{open, open},
		},
		"another class is a new finding": {
			steps: []step{{ev: drift}, {ev: otherClass}}, want: []sent{open, open},
		},
		"resolved after open sends one resolved message": {
			steps: []step{{ev: drift}, {ev: resolved(drift)}, {ev: resolved(drift)}},
			want:  []sent{open, closed}, wantSuppressed: 1,
		},
		"resolved without culprits matches the finding by its field paths": {
			steps: []step{{ev: drift}, {ev: resolved(withoutCulprits(drift))}},
			want:  []sent{open, closed},
		},
		"resolved with other field paths does not match": {
			steps: []step{{ev: drift}, {ev: resolved(replicasOnly)}},
			want:  []sent{open}, wantSuppressed: 1,
		},
		"resolved of a finding never alerted is not sent": {
			steps: []step{{ev: resolved(drift)}}, want: nil, wantSuppressed: 1,
		},
		"a finding that comes back after resolving is sent again": {
			steps: []step{{ev: drift}, {ev: resolved(drift)}, {ev: drift}},
			want:  []sent{open, closed, open},
		},
		"resolved without fields clears every finding of its type on the object": {
			steps: []step{{ev: drift}, {ev: replicasOnly}, {ev: conflict}, {ev: objectWide}},
			want: []sent{
				open,
				{Type: "drift", State: "open", Revision: drift.Revision, Paths: driftPaths[:1]},
				{Type: "conflict", State: "open", Revision: drift.Revision, Paths: driftPaths},
				// In the order they were alerted.
				closed,
				{Type: "drift", State: "resolved", Revision: drift.Revision, Paths: driftPaths[:1]},
			},
		},
		"a one-shot event is sent once per revision": {
			steps: []step{{ev: sync("r1")}, {ev: sync("r1")}, {ev: sync("r2")}},
			want: []sent{
				{Type: "sync", State: "open", Revision: "r1"},
				{Type: "sync", State: "open", Revision: "r2"},
			},
			wantSuppressed: 1,
		},
		"a one-shot event is forgotten after OnceWindow": {
			steps: []step{{ev: sync("r1")}, {advance: 59*time.Minute + 30*time.Second, ev: sync("r1")}, {advance: 30 * time.Second, ev: sync("r1")}},
			want: []sent{
				{Type: "sync", State: "open", Revision: "r1"},
				{Type: "sync", State: "open", Revision: "r1"},
			},
			wantSuppressed: 1,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock()
			rec := newRecorder(t)
			n := mustNew(t, []Sink{testAlert(t, "ops", SinkWebhook, rec.URL)}, testOptions(clk))
			for _, s := range tc.steps {
				clk.Step(s.advance)
				n.Notify(s.ev)
			}
			closeNotifier(t, n)
			if diff := cmp.Diff(tc.want, summarise(t, rec.Requests())); diff != "" {
				t.Errorf("sent (-want +got):\n%s", diff)
			}
			if got := testutil.ToFloat64(n.metrics.suppressed.WithLabelValues("ops")); got != tc.wantSuppressed {
				t.Errorf("syncd_alerts_suppressed_total = %v, want %v", got, tc.wantSuppressed)
			}
		})
	}
}

func withoutCulprits(ev Event) Event {
	ev.Fields = append([]Field(nil), ev.Fields...)
	for i := range ev.Fields {
		ev.Fields[i].Culprit = Culprit{}
		ev.Fields[i].Class = ""
	}
	return ev
}

// errorLog collects what ErrorHandler receives.
type errorLog struct {
	mu   sync.Mutex
	errs []error
}

func (l *errorLog) handle(err error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	l.errs = append(l.errs, err)
}

func (l *errorLog) get() []error {
	l.mu.Lock()
	defer l.mu.Unlock()
	return append([]error(nil), l.errs...)
}

func TestRetries(t *testing.T) {
	retryAt := func(d time.Duration) string { return t0.Add(d).Format(http.TimeFormat) }
	r := func(code int, kv ...string) response {
		resp := response{code: code, header: map[string]string{}}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i] == "body" {
				resp.body = kv[i+1]
				continue
			}
			resp.header[kv[i]] = kv[i+1]
		}
		return resp
	}
	type counts struct {
		Requests int
		Sent     float64
		Failed   map[string]float64
		Retries  map[string]float64
	}
	tests := map[string]struct {
		script     []response
		maxRetries int
		cap        time.Duration
		wantWaits  []time.Duration
		want       counts
		wantErr    string // in the SendError given to ErrorHandler
	}{
		"429 waits exactly Retry-After seconds": {
			script:    []response{r(429, "Retry-After", "7"), r(200)},
			wantWaits: []time.Duration{7 * time.Second},
			want:      counts{Requests: 2, Sent: 1, Retries: map[string]float64{ReasonRateLimited: 1}},
		},
		"429 with fractional Retry-After (Discord)": {
			script:    []response{r(429, "Retry-After", "0.25"), r(200)},
			wantWaits: []time.Duration{250 * time.Millisecond},
			want:      counts{Requests: 2, Sent: 1, Retries: map[string]float64{ReasonRateLimited: 1}},
		},
		"429 with an HTTP-date Retry-After": {
			script:    []response{r(429, "Retry-After", retryAt(30*time.Second)), r(200)},
			wantWaits: []time.Duration{30 * time.Second},
			want:      counts{Requests: 2, Sent: 1, Retries: map[string]float64{ReasonRateLimited: 1}},
		},
		"429 without Retry-After backs off": {
			script:    []response{r(429), r(200)},
			wantWaits: []time.Duration{time.Second},
			want:      counts{Requests: 2, Sent: 1, Retries: map[string]float64{ReasonRateLimited: 1}},
		},
		"429 asking for more than MaxRetryAfter gives up": {
			script:  []response{r(429, "Retry-After", "3600")},
			want:    counts{Requests: 1, Failed: map[string]float64{ReasonRateLimited: 1}},
			wantErr: "retry after 1h0m0s; that is longer than MaxRetryAfter 5m0s",
		},
		"5xx is retried with doubling backoff then succeeds": {
			script:    []response{r(503), r(502), r(500), r(200)},
			wantWaits: []time.Duration{time.Second, 2 * time.Second, 4 * time.Second},
			want:      counts{Requests: 4, Sent: 1, Retries: map[string]float64{ReasonHTTP5xx: 3}},
		},
		"backoff stops growing at Cap": {
			script:    []response{r(500), r(500), r(500), r(500), r(200)},
			cap:       3 * time.Second,
			wantWaits: []time.Duration{time.Second, 2 * time.Second, 3 * time.Second, 3 * time.Second},
			want:      counts{Requests: 5, Sent: 1, Retries: map[string]float64{ReasonHTTP5xx: 4}},
		},
		"408 is retried": {
			script:    []response{r(408), r(200)},
			wantWaits: []time.Duration{time.Second},
			want:      counts{Requests: 2, Sent: 1, Retries: map[string]float64{ReasonHTTP5xx: 1}},
		},
		"5xx until retries run out fails": {
			script:     []response{r(503, "body", "upstream down"), r(503), r(503, "body", "still down")},
			maxRetries: 2,
			wantWaits:  []time.Duration{time.Second, 2 * time.Second},
			want:       counts{Requests: 3, Failed: map[string]float64{ReasonHTTP5xx: 1}, Retries: map[string]float64{ReasonHTTP5xx: 2}},
			wantErr:    `alert sink "ops": drift alert`,
		},
		"4xx is not retried": {
			script:  []response{r(400, "body", "invalid_payload")},
			want:    counts{Requests: 1, Failed: map[string]float64{ReasonHTTP4xx: 1}},
			wantErr: "not delivered after 1 attempt(s) (http_4xx): provider answered HTTP 400 Bad Request: invalid_payload",
		},
		"a provider echoing the URL does not leak it": {
			script:  []response{r(404, "body", "no webhook at "+secretURLPath)},
			want:    counts{Requests: 1, Failed: map[string]float64{ReasonHTTP4xx: 1}},
			wantErr: "no webhook at <url>",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			clk := newFakeClock()
			rec := newRecorder(t, tc.script...)
			var log errorLog
			opts := testOptions(clk)
			opts.MaxRetries = tc.maxRetries
			if tc.cap != 0 {
				opts.Backoff.Cap = tc.cap
			}
			opts.ErrorHandler = log.handle
			n := mustNew(t, []Sink{testAlert(t, "ops", SinkSlack, rec.URL+secretURLPath)}, opts)
			n.Notify(driftEvent())
			closeNotifier(t, n)

			if diff := cmp.Diff(tc.wantWaits, clk.Waits()); diff != "" {
				t.Errorf("waits (-want +got):\n%s", diff)
			}
			got := counts{
				Requests: len(rec.Requests()),
				Sent:     testutil.ToFloat64(n.metrics.sent.WithLabelValues("ops", "drift")),
				Failed:   nonZero(n.metrics.failed, "ops", ReasonHTTP4xx, ReasonHTTP5xx, ReasonRateLimited, ReasonNetwork, ReasonConfig),
				Retries:  nonZero(n.metrics.retries, "ops", ReasonHTTP5xx, ReasonRateLimited, ReasonNetwork),
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("counts (-want +got):\n%s", diff)
			}
			errs := log.get()
			if tc.wantErr == "" {
				if len(errs) != 0 {
					t.Errorf("ErrorHandler got %v, want nothing", errs)
				}
				return
			}
			if len(errs) != 1 {
				t.Fatalf("ErrorHandler got %d errors, want 1: %v", len(errs), errs)
			}
			checkSendError(t, errs[0], tc.wantErr)
		})
	}
}

// checkSendError checks err is a *SendError containing want and not the
// secret part of the URL.
func checkSendError(t *testing.T, err error, want string) {
	t.Helper()
	var se *SendError
	if !errors.As(err, &se) {
		t.Fatalf("error %v is %T, want *SendError", err, err)
	}
	if !strings.Contains(err.Error(), want) {
		t.Errorf("error %q does not contain %q", err, want)
	}
	if strings.Contains(err.Error(), secretURLPath) || strings.Contains(err.Error(), "XXXXsecret") {
		t.Errorf("error %q leaks the webhook URL", err)
	}
}

// nonZero reads the counters of sink for reasons, leaving out zeros.
func nonZero(v *prometheus.CounterVec, sink string, reasons ...string) map[string]float64 {
	var out map[string]float64
	for _, r := range reasons {
		if x := testutil.ToFloat64(v.WithLabelValues(sink, r)); x != 0 {
			if out == nil {
				out = map[string]float64{}
			}
			out[r] = x
		}
	}
	return out
}

func TestSinkDown(t *testing.T) {
	clk := newFakeClock()
	var log errorLog
	opts := testOptions(clk)
	opts.MaxRetries = 1
	opts.ErrorHandler = log.handle
	n := mustNew(t, []Sink{testAlert(t, "chat", SinkDiscord, refusedURL(t))}, opts)

	n.Notify(driftEvent()) // returns at once: nothing listens, nothing waits
	closeNotifier(t, n)

	if got := testutil.ToFloat64(n.metrics.failed.WithLabelValues("chat", ReasonNetwork)); got != 1 {
		t.Errorf("syncd_alerts_failed_total{reason=network} = %v, want 1", got)
	}
	if got := testutil.ToFloat64(n.metrics.retries.WithLabelValues("chat", ReasonNetwork)); got != 1 {
		t.Errorf("syncd_alerts_retries_total{reason=network} = %v, want 1", got)
	}
	if diff := cmp.Diff([]time.Duration{time.Second}, clk.Waits()); diff != "" {
		t.Errorf("waits (-want +got):\n%s", diff)
	}
	errs := log.get()
	if len(errs) != 1 {
		t.Fatalf("ErrorHandler got %v, want 1 error", errs)
	}
	checkSendError(t, errs[0], "connection refused")
}

func TestNotifyNeverBlocks(t *testing.T) {
	rec := newRecorder(t)
	release := make(chan struct{})
	first := true
	rec.handler = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		if first {
			first = false
			<-release
		}
		return false
	}
	opts := testOptions(newFakeClock())
	opts.QueueSize = 10
	n := mustNew(t, []Sink{testAlert(t, "ops", SinkWebhook, rec.URL)}, opts)
	sync := func(i int) Event {
		return Event{Type: EventSync, App: "shop", Revision: fmt.Sprintf("r%03d", i)}
	}

	n.Notify(sync(0))
	<-rec.received // the sender is now stuck in the provider

	done := make(chan struct{})
	go func() {
		defer close(done)
		for i := 1; i <= 100; i++ {
			n.Notify(sync(i))
		}
	}()
	select {
	case <-done:
	case <-time.After(time.Minute):
		t.Fatal("Notify blocked while the provider hangs")
	}
	if got := testutil.ToFloat64(n.metrics.dropped.WithLabelValues("ops", ReasonQueueFull)); got != 90 {
		t.Errorf("syncd_alerts_dropped_total{reason=queue_full} = %v, want 90", got)
	}
	if got := testutil.ToFloat64(n.metrics.queued.WithLabelValues("ops")); got != 10 {
		t.Errorf("syncd_alerts_queue_length = %v, want 10", got)
	}
	close(release)
	closeNotifier(t, n)

	var got []string
	for _, s := range summarise(t, rec.Requests()) {
		got = append(got, s.Revision)
	}
	want := []string{"r000"}
	for i := 91; i <= 100; i++ {
		want = append(want, fmt.Sprintf("r%03d", i))
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("delivered revisions (-want +got); the oldest should be dropped:\n%s", diff)
	}

	// A dropped one-shot event is forgotten, so it is sent when it comes
	// again.
	if got := testutil.ToFloat64(n.metrics.sent.WithLabelValues("ops", "sync")); got != 11 {
		t.Errorf("syncd_alerts_sent_total = %v, want 11", got)
	}
	s := n.sinks[0]
	s.mu.Lock()
	_, remembered := s.open[dedupeKey(sync(1))]
	s.mu.Unlock()
	if remembered {
		t.Error("a dropped event is still remembered, its next occurrence would be suppressed")
	}
}

func TestRateLimit(t *testing.T) {
	clk := newFakeClock()
	rec := newRecorder(t)
	opts := testOptions(clk)
	opts.RateLimit, opts.Burst = 0.5, 1 // one alert every 2s
	n := mustNew(t, []Sink{testAlert(t, "ops", SinkSlack, rec.URL)}, opts)
	for _, rev := range []string{"r1", "r2", "r3"} {
		n.Notify(Event{Type: EventSync, App: "shop", Revision: rev})
	}
	closeNotifier(t, n)
	if len(rec.Requests()) != 3 {
		t.Errorf("got %d requests, want 3", len(rec.Requests()))
	}
	if diff := cmp.Diff([]time.Duration{2 * time.Second, 2 * time.Second}, clk.Waits()); diff != "" {
		t.Errorf("rate limiter waits (-want +got):\n%s", diff)
	}
}

func TestURLFileIsReadForEverySend(t *testing.T) {
	rec1, rec2 := newRecorder(t), newRecorder(t)
	a := testAlert(t, "ops", SinkMSTeams, rec1.URL)
	n := mustNew(t, []Sink{a}, testOptions(newFakeClock()))
	n.Notify(Event{Type: EventSync, App: "shop", Revision: "r1"})
	<-rec1.received
	if err := os.WriteFile(a.URLFile, []byte(rec2.URL+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Notify(Event{Type: EventSync, App: "shop", Revision: "r2"})
	closeNotifier(t, n)
	if got1, got2 := len(rec1.Requests()), len(rec2.Requests()); got1 != 1 || got2 != 1 {
		t.Errorf("requests to old and new URL: %d, %d; want 1, 1", got1, got2)
	}
}

func TestURLFileBrokenAfterStart(t *testing.T) {
	rec := newRecorder(t)
	a := testAlert(t, "ops", SinkSlack, rec.URL+secretURLPath)
	var log errorLog
	opts := testOptions(newFakeClock())
	opts.ErrorHandler = log.handle
	n := mustNew(t, []Sink{a}, opts)
	if err := os.WriteFile(a.URLFile, []byte("ftp://example.com"+secretURLPath), 0o600); err != nil {
		t.Fatal(err)
	}
	n.Notify(driftEvent())
	closeNotifier(t, n)
	if got := testutil.ToFloat64(n.metrics.failed.WithLabelValues("ops", ReasonConfig)); got != 1 {
		t.Errorf("syncd_alerts_failed_total{reason=config} = %v, want 1", got)
	}
	errs := log.get()
	if len(errs) != 1 {
		t.Fatalf("ErrorHandler got %v, want 1 error", errs)
	}
	checkSendError(t, errs[0], "does not hold an http(s) URL")
	if len(rec.Requests()) != 0 {
		t.Errorf("got %d requests, want none", len(rec.Requests()))
	}
}

func TestEventsFilter(t *testing.T) {
	rec := newRecorder(t)
	n := mustNew(t, []Sink{testAlert(t, "ops", SinkWebhook, rec.URL, EventDrift, EventError)}, testOptions(newFakeClock()))
	n.Notify(Event{Type: EventSync, App: "shop", Revision: "r1"})
	n.Notify(driftEvent())
	n.Notify(Event{Type: EventPrune, App: "shop", Revision: "r1", Object: ObjectRef{APIVersion: "v1", Kind: "ConfigMap", Namespace: "web", Name: "old"}})
	closeNotifier(t, n)
	var got []string
	for _, s := range summarise(t, rec.Requests()) {
		got = append(got, s.Type)
	}
	if diff := cmp.Diff([]string{"drift"}, got); diff != "" {
		t.Errorf("event types sent (-want +got):\n%s", diff)
	}
}

func TestCloseWhileProviderHangs(t *testing.T) {
	rec := newRecorder(t)
	rec.handler = func(w http.ResponseWriter, r *http.Request, body []byte) bool {
		<-r.Context().Done() // hang until the client gives up
		return true
	}
	n := mustNew(t, []Sink{testAlert(t, "ops", SinkWebhook, rec.URL)}, testOptions(newFakeClock()))
	for _, rev := range []string{"r1", "r2", "r3"} {
		n.Notify(Event{Type: EventSync, App: "shop", Revision: rev})
	}
	<-rec.received
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	err := n.Close(ctx)
	if !errors.Is(err, context.Canceled) {
		t.Errorf("Close = %v, want an error wrapping context.Canceled", err)
	}
	if got := testutil.ToFloat64(n.metrics.dropped.WithLabelValues("ops", ReasonShutdown)); got != 3 {
		t.Errorf("syncd_alerts_dropped_total{reason=shutdown} = %v, want 3", got)
	}
	n.Notify(driftEvent())
	if got := testutil.ToFloat64(n.metrics.dropped.WithLabelValues("ops", ReasonClosed)); got != 1 {
		t.Errorf("syncd_alerts_dropped_total{reason=closed} = %v, want 1", got)
	}
	if err := n.Close(context.Background()); err != nil {
		t.Errorf("second Close = %v, want nil", err)
	}
}

func TestMetricsRegistered(t *testing.T) {
	reg := prometheus.NewRegistry()
	rec := newRecorder(t, response{code: 500}, response{code: 400})
	opts := testOptions(newFakeClock())
	opts.Registerer = reg
	opts.MaxRetries = -1
	alerts := []Sink{testAlert(t, "ops", SinkSlack, rec.URL)}
	n := mustNew(t, alerts, opts)
	n.Notify(driftEvent())
	n.Notify(Event{Type: EventSync, App: "shop", Revision: "r1"})
	n.Notify(Event{Type: EventSync, App: "shop", Revision: "r2"})
	closeNotifier(t, n)

	// A Notifier rebuilt on the same registry (config reload) keeps the
	// counters.
	n2 := mustNew(t, alerts, opts)
	n2.Notify(Event{Type: EventSync, App: "shop", Revision: "r3"})
	closeNotifier(t, n2)

	want := `
# HELP syncd_alerts_failed_total Alerts given up on after retries, by sink and reason.
# TYPE syncd_alerts_failed_total counter
syncd_alerts_failed_total{reason="http_4xx",sink="ops"} 1
syncd_alerts_failed_total{reason="http_5xx",sink="ops"} 1
# HELP syncd_alerts_sent_total Alerts delivered, by sink and event type.
# TYPE syncd_alerts_sent_total counter
syncd_alerts_sent_total{sink="ops",type="sync"} 2
`
	if err := testutil.GatherAndCompare(reg, strings.NewReader(want), "syncd_alerts_sent_total", "syncd_alerts_failed_total"); err != nil {
		t.Error(err)
	}
}

func TestNewValidates(t *testing.T) {
	dir := t.TempDir()
	url := writeFile(t, dir, "url", "https://hooks.slack.com"+secretURLPath)
	key := writeFile(t, dir, "key", "k")
	empty := writeFile(t, dir, "empty", "\n")
	notURL := writeFile(t, dir, "noturl", "hooks.slack.com"+secretURLPath)
	ok := Sink{Name: "a", Type: SinkSlack, URLFile: url}
	with := func(f func(*Sink)) []Sink { a := ok; f(&a); return []Sink{a} }
	tests := map[string]struct {
		alerts []Sink
		opts   Options
		want   string // "" for success
	}{
		"valid":           {alerts: []Sink{ok, {Name: "b", Type: SinkWebhook, URLFile: url, HMACKeyFile: key, Events: []string{"drift"}}}},
		"no alerts":       {},
		"no name":         {alerts: with(func(a *Sink) { a.Name = "" }), want: `alerts[0] "": name is empty`},
		"duplicate name":  {alerts: []Sink{ok, ok}, want: `alerts[1] "a": name is already used by alerts[0]`},
		"unknown type":    {alerts: with(func(a *Sink) { a.Type = "email" }), want: `alerts[0] "a": type "email" is not one of slack, msteams, discord, webhook`},
		"no urlFile":      {alerts: with(func(a *Sink) { a.URLFile = "" }), want: "urlFile is empty"},
		"missing urlFile": {alerts: with(func(a *Sink) { a.URLFile = dir + "/nope" }), want: `alert sink "a": read urlFile: open ` + dir + "/nope"},
		"empty urlFile":   {alerts: with(func(a *Sink) { a.URLFile = empty }), want: "urlFile " + empty + " is empty"},
		"urlFile without scheme": {
			alerts: with(func(a *Sink) { a.URLFile = notURL }), want: "urlFile " + notURL + " does not hold an http(s) URL",
		},
		"webhook without key": {
			alerts: with(func(a *Sink) { a.Type = SinkWebhook }), want: "hmacKeyFile is empty",
		},
		"key on a chat sink": {
			alerts: with(func(a *Sink) { a.HMACKeyFile = key }), want: "hmacKeyFile is only used by type webhook, not slack",
		},
		"empty key file": {
			alerts: with(func(a *Sink) { a.Type, a.HMACKeyFile = SinkWebhook, empty }), want: "hmacKeyFile " + empty + " is empty",
		},
		"unknown event": {
			alerts: with(func(a *Sink) { a.Events = []string{"drift", "deploy"} }), want: `events: "deploy" is not one of drift, overlap, conflict, handoff, prune, error, sync`,
		},
		"negative queue": {opts: Options{QueueSize: -1}, want: "Options.QueueSize must not be negative"},
		"negative rate":  {opts: Options{RateLimit: -1}, want: "Options.RateLimit must not be negative"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			n, err := New(tc.alerts, tc.opts)
			if n != nil {
				defer n.Close(context.Background())
			}
			if tc.want == "" {
				if err != nil {
					t.Fatalf("New = %v, want success", err)
				}
				return
			}
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("New = %v, want an error containing %q", err, tc.want)
			}
			if strings.Contains(err.Error(), secretURLPath) {
				t.Errorf("error %q leaks the URL file's content", err)
			}
		})
	}
}

func TestConcurrentNotify(t *testing.T) {
	rec := newRecorder(t)
	opts := testOptions(newFakeClock())
	opts.QueueSize = 1000
	n := mustNew(t, []Sink{
		testAlert(t, "a", SinkWebhook, rec.URL),
		testAlert(t, "b", SinkDiscord, rec.URL, EventSync),
	}, opts)
	var wg sync.WaitGroup
	for g := range 8 {
		wg.Add(1)
		go func() {
			defer wg.Done()
			// Every goroutine reports the same 50 revisions, half of them
			// twice: each sink must send each revision once.
			for i := range 50 {
				ev := Event{Type: EventSync, App: "shop", Revision: fmt.Sprintf("r%02d", (i+g)%50)}
				n.Notify(ev)
				if i%2 == 0 {
					n.Notify(ev)
				}
			}
		}()
	}
	wg.Wait()
	closeNotifier(t, n)
	for _, sink := range []string{"a", "b"} {
		if got := testutil.ToFloat64(n.metrics.sent.WithLabelValues(sink, "sync")); got != 50 {
			t.Errorf("sink %s sent %v alerts, want 50", sink, got)
		}
		if got := testutil.ToFloat64(n.metrics.suppressed.WithLabelValues(sink)); got != 8*75-50 {
			t.Errorf("sink %s suppressed %v, want %d", sink, got, 8*75-50)
		}
	}
	if got := len(rec.Requests()); got != 100 {
		t.Errorf("server got %d requests, want 100", got)
	}
}
