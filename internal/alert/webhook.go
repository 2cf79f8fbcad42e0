package alert

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"net/http"
	"strconv"
	"strings"
	"time"
)

// Headers of a "webhook" sink request.
const (
	// HeaderTimestamp holds the Unix time, in seconds, at which the request
	// was signed.
	HeaderTimestamp = "X-Syncd-Timestamp"
	// HeaderSignature holds "sha256=" and the lower-case hex HMAC-SHA256,
	// keyed with the sink's HMAC key, of the timestamp, a ".", and the body.
	HeaderSignature = "X-Syncd-Signature"
)

// WebhookVersion is the value of WebhookPayload.Version; field names within
// a version never change meaning.
const WebhookVersion = "syncd.dev/alert/v1"

// Webhook payload limits: longer texts (values, summaries, names) are
// cut with "…", and fields beyond the first webhookFieldsMax are counted
// in FieldsOmitted, so that one event cannot post megabytes.
const (
	webhookTextMax   = 2048
	webhookFieldsMax = 100
)

// DefaultMaxAge is how old a signed request may be before VerifyWebhook
// rejects it as a possible replay.
const DefaultMaxAge = 5 * time.Minute

// WebhookPayload is the JSON body the "webhook" sink posts.
type WebhookPayload struct {
	// Version is WebhookVersion.
	Version string `json:"version"`
	// Sink is the name of the alert in the syncd config.
	Sink string `json:"sink"`
	// Type is the event type: drift, overlap, conflict, handoff, prune, error, sync.
	Type string `json:"type"`
	// State is "open" or "resolved".
	State string `json:"state"`
	// Fingerprint is the same for an open alert and its resolved message.
	Fingerprint string         `json:"fingerprint"`
	App         string         `json:"app"`
	Revision    string         `json:"revision"`
	Object      WebhookObject  `json:"object"`
	Summary     string         `json:"summary"`
	Fields      []WebhookField `json:"fields"`
	// FieldsOmitted counts the fields left out of Fields (at most 100 are
	// sent).
	FieldsOmitted int `json:"fieldsOmitted"`
	// Time is when syncd observed the event (RFC 3339, UTC).
	Time time.Time `json:"time"`
}

// WebhookObject names the Kubernetes object; every field is "" for
// events about a whole app.
type WebhookObject struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace"`
	Name       string `json:"name"`
}

// WebhookField is one field of the object. Desired and Live are "" when
// the field is absent from Git or from the cluster, and "<redacted>" when
// Sensitive is true. Texts longer than 2048 characters are cut with "…".
type WebhookField struct {
	Path      string          `json:"path"`
	Class     string          `json:"class"`
	Desired   string          `json:"desired"`
	Live      string          `json:"live"`
	Sensitive bool            `json:"sensitive"`
	Culprit   *WebhookCulprit `json:"culprit,omitempty"`
}

// WebhookCulprit is the manager that last wrote a field.
type WebhookCulprit struct {
	Manager     string     `json:"manager"`
	Operation   string     `json:"operation"`
	Subresource string     `json:"subresource"`
	Time        *time.Time `json:"time,omitempty"`
}

// renderWebhook builds the generic webhook body for m.
func renderWebhook(m message) ([]byte, error) {
	ev := m.ev
	p := WebhookPayload{
		Version:     WebhookVersion,
		Sink:        m.sink,
		Type:        ev.Type,
		State:       m.state(),
		Fingerprint: m.fingerprint,
		App:         fit(ev.App, webhookTextMax, nil),
		Revision:    fit(ev.Revision, webhookTextMax, nil),
		Object:      webhookObject(ev.Object),
		Summary:     fit(ev.Summary, webhookTextMax, nil),
		Fields:      make([]WebhookField, 0, min(len(ev.Fields), webhookFieldsMax)),
		Time:        ev.Time.UTC(),
	}
	for i, f := range ev.Fields {
		if i == webhookFieldsMax {
			p.FieldsOmitted = len(ev.Fields) - i
			break
		}
		wf := WebhookField{
			Path:      fit(f.Path, webhookTextMax, nil),
			Class:     fit(f.Class, webhookTextMax, nil),
			Desired:   fit(f.Desired, webhookTextMax, nil),
			Live:      fit(f.Live, webhookTextMax, nil),
			Sensitive: f.Sensitive,
		}
		if c := f.Culprit; c != (Culprit{}) {
			wf.Culprit = &WebhookCulprit{Manager: c.Manager, Operation: c.Operation, Subresource: c.Subresource}
			if !c.Time.IsZero() {
				t := c.Time.UTC()
				wf.Culprit.Time = &t
			}
		}
		p.Fields = append(p.Fields, wf)
	}
	return marshal(p)
}

// webhookObject names o within the payload's text limit: an object that
// failed to apply may carry a name from Git the API server refused for
// its length.
func webhookObject(o ObjectRef) WebhookObject {
	return WebhookObject{
		APIVersion: fit(o.APIVersion, webhookTextMax, nil),
		Kind:       fit(o.Kind, webhookTextMax, nil),
		Namespace:  fit(o.Namespace, webhookTextMax, nil),
		Name:       fit(o.Name, webhookTextMax, nil),
	}
}

// Sign returns the X-Syncd-Signature value for body signed at ts (Unix
// seconds): "sha256=" + hex(HMAC-SHA256(key, ts + "." + body)).
func Sign(key []byte, ts string, body []byte) string {
	mac := hmac.New(sha256.New, key)
	mac.Write([]byte(ts))
	mac.Write([]byte("."))
	mac.Write(body)
	return "sha256=" + hex.EncodeToString(mac.Sum(nil))
}

// signRequest sets the timestamp and signature headers of req.
func signRequest(h http.Header, key, body []byte, now time.Time) {
	ts := strconv.FormatInt(now.Unix(), 10)
	h.Set(HeaderTimestamp, ts)
	h.Set(HeaderSignature, Sign(key, ts, body))
}

// Errors returned by VerifyWebhook.
var (
	ErrNoSignature    = errors.New("alert: request has no " + HeaderTimestamp + " or " + HeaderSignature + " header")
	ErrBadSignature   = errors.New("alert: " + HeaderSignature + " does not match the body")
	ErrStaleTimestamp = errors.New("alert: " + HeaderTimestamp + " is outside the allowed window (possible replay)")
)

// VerifyWebhook checks a request received from a "webhook" sink: the
// signature must be the HMAC of the timestamp and body under key, and the
// timestamp within maxAge of now (in either direction, for clock skew);
// maxAge <= 0 means DefaultMaxAge. It compares in constant time. Receivers
// that must reject exact replays inside the window also remember the
// signatures they accepted for maxAge.
func VerifyWebhook(key []byte, h http.Header, body []byte, now time.Time, maxAge time.Duration) error {
	if maxAge <= 0 {
		maxAge = DefaultMaxAge
	}
	ts, sig := h.Get(HeaderTimestamp), h.Get(HeaderSignature)
	if ts == "" || sig == "" {
		return ErrNoSignature
	}
	secs, err := strconv.ParseInt(ts, 10, 64)
	if err != nil {
		return fmt.Errorf("alert: %s %q is not Unix seconds: %w", HeaderTimestamp, ts, ErrStaleTimestamp)
	}
	age := now.Sub(time.Unix(secs, 0))
	if age > maxAge || age < -maxAge {
		return fmt.Errorf("alert: signed %s ago, more than %s: %w", age.Round(time.Second), maxAge, ErrStaleTimestamp)
	}
	got, ok := strings.CutPrefix(sig, "sha256=")
	if !ok {
		return fmt.Errorf("alert: %s does not start with \"sha256=\": %w", HeaderSignature, ErrBadSignature)
	}
	gotMAC, err := hex.DecodeString(got)
	if err != nil {
		return fmt.Errorf("alert: %s is not hex: %w", HeaderSignature, ErrBadSignature)
	}
	want, _ := hex.DecodeString(strings.TrimPrefix(Sign(key, ts, body), "sha256="))
	if !hmac.Equal(gotMAC, want) {
		return ErrBadSignature
	}
	return nil
}
