package alert

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"
)

// BEGIN receiver snippet

// verifySyncd checks a request from a syncd "webhook" alert: body is the
// raw request body, key the shared HMAC key.
func verifySyncd(key []byte, h http.Header, body []byte, now time.Time) error {
	ts := h.Get("X-Syncd-Timestamp")
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return errors.New("missing or malformed X-Syncd-Timestamp")
	}
	// Reject requests signed more than 5 minutes ago (or ahead): replays.
	if age := now.Sub(time.Unix(secs, 0)); age > 5*time.Minute || age < -5*time.Minute {
		return errors.New("X-Syncd-Timestamp too old: possible replay")
	}
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(ts + "."))
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	if !hmac.Equal([]byte(h.Get("X-Syncd-Signature")), []byte(want)) {
		return errors.New("X-Syncd-Signature does not match")
	}
	return nil
}

// END receiver snippet

// TestReceiverSnippet runs the snippet from docs/alerts.md against real
// requests, and a replay of one of them.
func TestReceiverSnippet(t *testing.T) {
	rec := newRecorder(t)
	n := mustNew(t, []Sink{testAlert(t, "ops", SinkWebhook, rec.URL)}, testOptions(newFakeClock()))
	n.Notify(driftEvent())
	closeNotifier(t, n)
	r := rec.Requests()[0]
	if err := verifySyncd([]byte(testKey), r.Header, r.Body, t0.Add(time.Minute)); err != nil {
		t.Errorf("snippet rejects a genuine request: %v", err)
	}
	if err := verifySyncd([]byte(testKey), r.Header, r.Body, t0.Add(6*time.Minute)); err == nil {
		t.Error("snippet accepts a request replayed 6 minutes later")
	}
	if err := verifySyncd([]byte(testKey), r.Header, append(r.Body, ' '), t0); err == nil {
		t.Error("snippet accepts a changed body")
	}
}

// TestDocsMatchCode checks docs/alerts.md shows the golden payloads and
// the receiver snippet exactly as the code produces and tests them.
func TestDocsMatchCode(t *testing.T) {
	doc, err := os.ReadFile(filepath.Join("..", "..", "docs", "alerts.md"))
	if err != nil {
		t.Fatal(err)
	}
	src, err := os.ReadFile("receiver_test.go")
	if err != nil {
		t.Fatal(err)
	}
	_, snippet, _ := strings.Cut(string(src), "// BEGIN receiver snippet\n\n")
	snippet, _, _ = strings.Cut(snippet, "\n// END receiver snippet")
	want := map[string]string{"receiver snippet": snippet}
	for _, name := range []string{"slack-open", "msteams-open", "discord-open", "webhook-open", "webhook-resolved"} {
		b, err := os.ReadFile(filepath.Join("testdata", name+".json"))
		if err != nil {
			t.Fatal(err)
		}
		want["testdata/"+name+".json"] = string(b)
	}
	for name, text := range want {
		if !strings.Contains(string(doc), text) {
			t.Errorf("docs/alerts.md does not show %s as it is now; paste it again:\n%s", name, text)
		}
	}
}
