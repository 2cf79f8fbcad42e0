package main

import (
	"bytes"
	"context"
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"
)

// alertPayload is the part of a syncd.dev/alert/v1 webhook body (see
// docs/alerts.md, "Generic webhook") the demo checks.
type alertPayload struct {
	Version     string `json:"version"`
	Sink        string `json:"sink"`
	Type        string `json:"type"`
	State       string `json:"state"`
	Fingerprint string `json:"fingerprint"`
	App         string `json:"app"`
	Revision    string `json:"revision"`
	Object      struct {
		Kind      string `json:"kind"`
		Namespace string `json:"namespace"`
		Name      string `json:"name"`
	} `json:"object"`
	Summary string `json:"summary"`
	Fields  []struct {
		Path    string `json:"path"`
		Class   string `json:"class"`
		Desired string `json:"desired"`
		Live    string `json:"live"`
		Culprit *struct {
			Manager     string `json:"manager"`
			Operation   string `json:"operation"`
			Subresource string `json:"subresource"`
			Time        string `json:"time"`
		} `json:"culprit"`
	} `json:"fields"`
}

// received is one alert the receiver accepted: its decoded payload and
// the body exactly as it arrived.
type received struct {
	alertPayload
	raw []byte
}

// receiver is the demo's stand-in for a chat or incident system: an HTTP
// endpoint on loopback that checks each request's X-Syncd-Signature
// against the shared key and keeps the alerts it accepted.
type receiver struct {
	URL string

	key      []byte
	srv      *http.Server
	mu       sync.Mutex
	alerts   []received
	rejected []string
}

func startReceiver(key []byte) (*receiver, error) {
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("alert receiver: %w", err)
	}
	r := &receiver{URL: "http://" + l.Addr().String() + "/alerts", key: key}
	r.srv = &http.Server{Handler: http.HandlerFunc(r.serve), ReadHeaderTimeout: 10 * time.Second}
	go func() { _ = r.srv.Serve(l) }()
	return r, nil
}

func (r *receiver) serve(w http.ResponseWriter, req *http.Request) {
	body, err := io.ReadAll(io.LimitReader(req.Body, 1<<20))
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	// The signature covers the timestamp, a ".", and the raw body.
	mac := hmac.New(sha256.New, r.key)
	mac.Write([]byte(req.Header.Get("X-Syncd-Timestamp") + "."))
	mac.Write(body)
	want := "sha256=" + hex.EncodeToString(mac.Sum(nil))
	var p alertPayload
	decodeErr := json.Unmarshal(body, &p)
	r.mu.Lock()
	defer r.mu.Unlock()
	switch {
	case !hmac.Equal([]byte(req.Header.Get("X-Syncd-Signature")), []byte(want)):
		r.rejected = append(r.rejected, "X-Syncd-Signature does not match")
		http.Error(w, "bad signature", http.StatusUnauthorized)
		return
	case decodeErr != nil:
		r.rejected = append(r.rejected, "body is not JSON: "+decodeErr.Error())
		http.Error(w, "bad body", http.StatusBadRequest)
		return
	}
	r.alerts = append(r.alerts, received{alertPayload: p, raw: body})
	w.WriteHeader(http.StatusNoContent)
}

// culprits returns the culprit manager of each field of the alert, by path.
func (a alertPayload) culprits() map[string]string {
	out := map[string]string{}
	for _, f := range a.Fields {
		if f.Culprit != nil {
			out[f.Path] = f.Culprit.Manager
		}
	}
	return out
}

// find returns the accepted alerts for which match is true.
func (r *receiver) find(match func(alertPayload) bool) []received {
	r.mu.Lock()
	defer r.mu.Unlock()
	var out []received
	for _, a := range r.alerts {
		if match(a.alertPayload) {
			out = append(out, a)
		}
	}
	return out
}

// summary lists every alert accepted so far, one a line, for errors.
func (r *receiver) summary() string {
	all := r.find(func(alertPayload) bool { return true })
	lines := make([]string, 0, len(all))
	for _, a := range all {
		lines = append(lines, "\n  "+a.oneLine())
	}
	return fmt.Sprintf("the receiver holds %d alert(s)%s", len(all), strings.Join(lines, ""))
}

// err reports requests the receiver refused: a demo expectation.
func (r *receiver) err() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.rejected) > 0 {
		return fmt.Errorf("alert receiver refused %d request(s), first: %s", len(r.rejected), r.rejected[0])
	}
	return nil
}

func (r *receiver) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	return r.srv.Shutdown(ctx)
}

// oneLine is an alert in one line: type, state, object and summary.
func (a received) oneLine() string {
	obj := ""
	if a.Object.Kind != "" {
		obj = fmt.Sprintf(" %s %s/%s", a.Object.Kind, a.Object.Namespace, a.Object.Name)
	}
	return fmt.Sprintf("%s (%s) app %s at %s%s: %s", a.Type, a.State, a.App, short(a.Revision), obj, a.Summary)
}

// indented is the raw body, indented for reading.
func (a received) indented() string {
	var b bytes.Buffer
	if json.Indent(&b, a.raw, "      ", "  ") != nil {
		return string(a.raw)
	}
	return "      " + b.String()
}
