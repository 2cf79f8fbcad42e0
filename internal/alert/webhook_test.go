package alert

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// independentSignature computes the documented signature without the
// package's code: hex(HMAC-SHA256(key, timestamp + "." + body)).
func independentSignature(key, ts string, body []byte) string {
	mac := hmac.New(sha256.New, []byte(key))
	mac.Write([]byte(ts + "." + string(body)))
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

func TestWebhookPayload(t *testing.T) {
	clk := newFakeClock()
	rec := newRecorder(t)
	n := mustNew(t, []Sink{testAlert(t, "ops", SinkWebhook, rec.URL)}, testOptions(clk))
	ev := driftEvent()
	n.Notify(ev)
	resolved := resolvedDriftEvent()
	n.Notify(resolved)
	closeNotifier(t, n)

	reqs := rec.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	var got []webhookSchema
	for _, r := range reqs {
		ts := r.Header.Get("X-Syncd-Timestamp")
		if ts != strconv.FormatInt(t0.Unix(), 10) {
			t.Errorf("X-Syncd-Timestamp = %q, want the clock's Unix seconds %d", ts, t0.Unix())
		}
		if got, want := r.Header.Get("X-Syncd-Signature"), independentSignature(testKey, ts, r.Body); got != want {
			t.Errorf("X-Syncd-Signature = %q, want %q", got, want)
		}
		var p webhookSchema
		decodeStrict(t, r.Body, &p)
		got = append(got, p)
	}

	at := t0.Add(-time.Second)
	open := webhookSchema{
		Version: "syncd.dev/alert/v1", Sink: "ops", Type: "drift", State: "open",
		Fingerprint: got[0].Fingerprint, App: "web", Revision: driftRevision,
		Summary: "2 field(s) of Deployment testreportexample-1/web drifted from Git", Time: t0,
	}
	open.Object.APIVersion, open.Object.Kind, open.Object.Namespace, open.Object.Name = "apps/v1", "Deployment", "testreportexample-1", "web"
	open.Fields = []webhookFieldSchema{
		{
			// The server recorded no time for the /scale write: none is sent.
			Path: ".spec.replicas", Class: "taken-over", Desired: "2", Live: "5",
			Culprit: &webhookCulpritSchema{Manager: "hpa-controller", Operation: "Update", Subresource: "scale"},
		},
		{
			Path: `.spec.template.spec.containers[name="app"].image`, Class: "taken-over",
			Desired: "example.com/web:v1.4", Live: "example.com/web:v1.5-hotfix",
			Culprit: &webhookCulpritSchema{Manager: "kubectl-edit", Operation: "Update", Time: &at},
		},
	}

	res := open
	res.State, res.Summary, res.Revision, res.Time = "resolved", resolved.Summary, resolved.Revision, resolved.Time

	if diff := cmp.Diff([]webhookSchema{open, res}, got); diff != "" {
		t.Errorf("webhook payloads (-want +got):\n%s", diff)
	}
	if len(got[0].Fingerprint) != 24 || got[0].Fingerprint != got[1].Fingerprint {
		t.Errorf("fingerprints %q and %q: want the same 24 hex digits for open and resolved", got[0].Fingerprint, got[1].Fingerprint)
	}
}

func TestWebhookKeyRotation(t *testing.T) {
	rec := newRecorder(t)
	a := testAlert(t, "ops", SinkWebhook, rec.URL)
	n := mustNew(t, []Sink{a}, testOptions(newFakeClock()))
	n.Notify(driftEvent())
	// Wait for the first request before rotating the key.
	<-rec.received
	if err := os.WriteFile(a.HMACKeyFile, []byte("rotated-key\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	sync := Event{Type: EventSync, App: "shop", Revision: "r2", Time: t0}
	n.Notify(sync)
	closeNotifier(t, n)
	reqs := rec.Requests()
	if len(reqs) != 2 {
		t.Fatalf("got %d requests, want 2", len(reqs))
	}
	for i, key := range []string{testKey, "rotated-key"} {
		r := reqs[i]
		if got, want := r.Header.Get(HeaderSignature), independentSignature(key, r.Header.Get(HeaderTimestamp), r.Body); got != want {
			t.Errorf("request %d signed with the wrong key: got %q, want %q", i, got, want)
		}
	}
}

func TestVerifyWebhook(t *testing.T) {
	body := []byte(`{"version":"syncd.dev/alert/v1"}`)
	signedAt := t0
	ts := strconv.FormatInt(signedAt.Unix(), 10)
	headers := func(ts, sig string) http.Header {
		h := http.Header{}
		if ts != "" {
			h.Set("X-Syncd-Timestamp", ts)
		}
		if sig != "" {
			h.Set("X-Syncd-Signature", sig)
		}
		return h
	}
	good := independentSignature(testKey, ts, body)
	tests := map[string]struct {
		key    string
		header http.Header
		body   []byte
		now    time.Time
		want   error
	}{
		"valid":                {testKey, headers(ts, good), body, signedAt.Add(30 * time.Second), nil},
		"valid at 5m":          {testKey, headers(ts, good), body, signedAt.Add(5 * time.Minute), nil},
		"replayed after 5m":    {testKey, headers(ts, good), body, signedAt.Add(5*time.Minute + time.Second), ErrStaleTimestamp},
		"from the future":      {testKey, headers(ts, good), body, signedAt.Add(-6 * time.Minute), ErrStaleTimestamp},
		"body changed":         {testKey, headers(ts, good), []byte(`{"version":"x"}`), signedAt, ErrBadSignature},
		"timestamp changed":    {testKey, headers(strconv.FormatInt(signedAt.Unix()+1, 10), good), body, signedAt, ErrBadSignature},
		"wrong key":            {"other", headers(ts, good), body, signedAt, ErrBadSignature},
		"no sha256= prefix":    {testKey, headers(ts, good[len("sha256="):]), body, signedAt, ErrBadSignature},
		"not hex":              {testKey, headers(ts, "sha256=zz"), body, signedAt, ErrBadSignature},
		"missing signature":    {testKey, headers(ts, ""), body, signedAt, ErrNoSignature},
		"missing timestamp":    {testKey, headers("", good), body, signedAt, ErrNoSignature},
		"timestamp not number": {testKey, headers("yesterday", good), body, signedAt, ErrStaleTimestamp},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			err := VerifyWebhook([]byte(tc.key), tc.header, tc.body, tc.now, 0)
			if !errors.Is(err, tc.want) || (tc.want == nil) != (err == nil) {
				t.Errorf("VerifyWebhook = %v, want %v", err, tc.want)
			}
		})
	}
}

func TestSignMatchesIndependentHMAC(t *testing.T) {
	for _, body := range []string{"", "{}", `{"a":"ä😀"}`} {
		if got, want := Sign([]byte(testKey), "1764450000", []byte(body)), independentSignature(testKey, "1764450000", []byte(body)); got != want {
			t.Errorf("Sign(%q) = %q, want %q", body, got, want)
		}
	}
}

// TestSignDocumentedVector pins the test vector printed in docs/alerts.md
// (computed there with Python's hmac module).
func TestSignDocumentedVector(t *testing.T) {
	got := Sign([]byte("s3cr3t-hmac-key"), "1764450000", []byte(`{"version":"syncd.dev/alert/v1"}`))
	want := "sha256=f6f1d698a751de08a81423f2dd36d69bcc49b3cc15ca0d95dceeda95997b95b0"
	if got != want {
		t.Errorf("Sign = %q, want the documented %q", got, want)
	}
}
