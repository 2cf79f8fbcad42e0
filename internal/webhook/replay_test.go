package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

// delivery is one request of a replay script: a body, the headers, and
// how long after the previous request it arrives.
type delivery struct {
	after   time.Duration
	body    string
	headers map[string]string
	// wantCode is the answer; triggered and replayed results are
	// counted by the script.
	wantCode int
}

// fakeClock is a clock a test moves.
type fakeClock struct{ t time.Time }

func (c *fakeClock) now() time.Time { return c.t }

// TestHandlerReplays: a delivery is accepted once within the window, by
// its id or, for a signed body, by the body (a replay may change the
// id header, which the signature does not cover); a replay is answered
// 200 without a poll; an unverified request is never remembered; past
// the window the same delivery polls again.
func TestHandlerReplays(t *testing.T) {
	const secret = "s3cret"
	push := func(after string) string {
		return `{"ref":"refs/heads/main","after":"` + after + `","repository":{"clone_url":"https://git.example.com/org/app.git"}}`
	}
	github := func(body, id string) map[string]string {
		return map[string]string{"X-Hub-Signature-256": "sha256=" + sign(secret, body), "X-GitHub-Delivery": id}
	}
	gitlab := func(key string) map[string]string {
		return map[string]string{"X-Gitlab-Token": secret, "Idempotency-Key": key}
	}
	a, b := push("aaaa"), push("bbbb")
	tests := map[string]struct {
		provider   string
		script     []delivery
		triggered  int
		replayed   float64
		capacity   int
		wantReplay string // the replay's answer says this
	}{
		"same delivery twice": {provider: "github", script: []delivery{
			{body: a, headers: github(a, "d-1"), wantCode: 202},
			{body: a, headers: github(a, "d-1"), wantCode: 200},
		}, triggered: 1, replayed: 1, wantReplay: "already received within the last 1h0m0s: not polled again"},
		"signed body again under a new id": {provider: "github", script: []delivery{
			{body: a, headers: github(a, "d-1"), wantCode: 202},
			{body: a, headers: github(a, "d-forged"), wantCode: 200},
		}, triggered: 1, replayed: 1},
		"signed body again without an id": {provider: "gitea", script: []delivery{
			{body: a, headers: map[string]string{"X-Gitea-Signature": sign(secret, a)}, wantCode: 202},
			{body: a, headers: map[string]string{"X-Gitea-Signature": sign(secret, a)}, wantCode: 200},
		}, triggered: 1, replayed: 1},
		"two pushes": {provider: "github", script: []delivery{
			{body: a, headers: github(a, "d-1"), wantCode: 202},
			{body: b, headers: github(b, "d-2"), wantCode: 202},
		}, triggered: 2},
		"a retry of GitLab's": {provider: "gitlab", script: []delivery{
			{body: a, headers: gitlab("k-1"), wantCode: 202},
			{body: a, headers: gitlab("k-1"), wantCode: 200},
		}, triggered: 1, replayed: 1},
		"GitLab's body is not signed: a new key is a new delivery": {provider: "gitlab", script: []delivery{
			{body: a, headers: gitlab("k-1"), wantCode: 202},
			{body: a, headers: gitlab("k-2"), wantCode: 202},
		}, triggered: 2},
		"an unverified request is not remembered": {provider: "github", script: []delivery{
			{body: a, headers: map[string]string{"X-Hub-Signature-256": "sha256=" + sign("wrong", a), "X-GitHub-Delivery": "d-1"}, wantCode: 401},
			{body: a, headers: github(a, "d-1"), wantCode: 202},
		}, triggered: 1},
		"past the window": {provider: "github", script: []delivery{
			{body: a, headers: github(a, "d-1"), wantCode: 202},
			{after: 59 * time.Minute, body: a, headers: github(a, "d-1"), wantCode: 200},
			{after: 2 * time.Minute, body: a, headers: github(a, "d-1"), wantCode: 202},
		}, triggered: 2, replayed: 1},
		"past the capacity the oldest is forgotten": {provider: "github", capacity: 2, script: []delivery{
			{body: a, headers: github(a, "d-1"), wantCode: 202},
			{body: b, headers: github(b, "d-2"), wantCode: 202},
			{body: a, headers: github(a, "d-1"), wantCode: 202},
		}, triggered: 3},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := pollerOf(onBranch("app", "https://git.example.com/org/app", "main"))
			h := NewHandler(func() ([]byte, error) { return []byte(secret), nil }, []Poller{rec}, prometheus.NewRegistry())
			clock := &fakeClock{t: time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)}
			h.replays = newReplayGuard(DefaultReplayWindow, orDefault(tc.capacity, DefaultReplayCapacity), clock.now)
			var codes, want []int
			var replayAnswer string
			for _, d := range tc.script {
				clock.t = clock.t.Add(d.after)
				req := httptest.NewRequest(http.MethodPost, "/webhook/"+tc.provider, strings.NewReader(d.body))
				for k, v := range d.headers {
					req.Header.Set(k, v)
				}
				w := httptest.NewRecorder()
				h.ServeHTTP(w, req)
				codes, want = append(codes, w.Code), append(want, d.wantCode)
				if w.Code == http.StatusOK {
					replayAnswer = w.Body.String()
				}
			}
			if diff := cmp.Diff(want, codes); diff != "" {
				t.Errorf("answers (-want +got):\n%s", diff)
			}
			if len(rec.triggered) != tc.triggered {
				t.Errorf("%d polls, want %d", len(rec.triggered), tc.triggered)
			}
			if got := testutil.ToFloat64(h.received.WithLabelValues(tc.provider, string(resultReplayed))); got != tc.replayed {
				t.Errorf("syncd_webhook_requests_total{result=replayed} = %v, want %v", got, tc.replayed)
			}
			if !strings.Contains(replayAnswer, tc.wantReplay) {
				t.Errorf("the replay's answer %q does not say %q", replayAnswer, tc.wantReplay)
			}
		})
	}
}

// orDefault is v, or def when v is zero.
func orDefault(v, def int) int {
	if v == 0 {
		return def
	}
	return v
}
