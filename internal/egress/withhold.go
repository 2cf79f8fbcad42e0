package egress

import (
	"bytes"
	"encoding/json"
	"io"
	"mime"
	"net/http"
	"strconv"

	utilnet "k8s.io/apimachinery/pkg/util/net"
)

// WithheldBody is the body a client of a remote API server reads in
// place of an error answer that is not the API server's own status.
const WithheldBody = "the response body is not shown: it is not a Kubernetes API status"

// maxStatusBytes bounds how much of an error answer is read to tell a
// Kubernetes status from anything else; a status is far smaller.
const maxStatusBytes = 64 << 10

// protobufMagic starts every Kubernetes protobuf-encoded object.
var protobufMagic = []byte("k8s\x00")

// WithholdErrorBodies wraps rt, the transport of a client of a remote
// API server whose address someone other than the operator may choose
// (a kubeconfig from a Secret), so that nothing another server sends
// reaches an error message: an error answer's body reaches client-go
// only when it is a Kubernetes status (JSON with kind Status, or
// Kubernetes protobuf), which client-go turns into NotFound, Conflict,
// Forbidden and the like; any other body is replaced by WithheldBody,
// so client-go's error says the HTTP status and nothing the server
// wrote. A redirect's Location is dropped, so the client never follows
// it to another address (it reads a 3xx error instead).
//
// It is a transport.WrapperFunc: rest.Config.Wrap(WithholdErrorBodies).
func WithholdErrorBodies(rt http.RoundTripper) http.RoundTripper {
	return withholding{next: rt}
}

// withholding is the RoundTripper of WithholdErrorBodies.
type withholding struct{ next http.RoundTripper }

var _ utilnet.RoundTripperWrapper = withholding{}

// RoundTrip implements http.RoundTripper.
func (w withholding) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := w.next.RoundTrip(req)
	if err != nil || !isErrorAnswer(resp.StatusCode) {
		return resp, err
	}
	resp.Header.Del("Location")
	body, err := io.ReadAll(io.LimitReader(resp.Body, maxStatusBytes+1))
	resp.Body.Close()
	if err != nil || len(body) > maxStatusBytes || !isAPIStatus(resp.Header.Get("Content-Type"), body) {
		body = []byte(WithheldBody)
		resp.Header.Set("Content-Type", "text/plain; charset=utf-8")
	}
	resp.Body = io.NopCloser(bytes.NewReader(body))
	resp.ContentLength = int64(len(body))
	resp.Header.Set("Content-Length", strconv.Itoa(len(body)))
	return resp, nil
}

// WrappedRoundTripper returns the transport it wraps, so client-go can
// cancel a request through it (k8s.io/apimachinery's
// net.RoundTripperWrapper).
func (w withholding) WrappedRoundTripper() http.RoundTripper { return w.next }

// isErrorAnswer reports whether an HTTP status is one client-go reads
// as an error: anything but 2xx, 101 (an upgrade) and 304 (not
// modified, which has no body).
func isErrorAnswer(code int) bool {
	switch {
	case code == http.StatusSwitchingProtocols, code == http.StatusNotModified:
		return false
	case code >= 200 && code < 300:
		return false
	}
	return true
}

// isAPIStatus reports whether body, of the given Content-Type, is what
// a Kubernetes API server sends with an error: a Status in JSON, or an
// object in Kubernetes protobuf.
func isAPIStatus(contentType string, body []byte) bool {
	media, _, err := mime.ParseMediaType(contentType)
	if err != nil {
		return false
	}
	switch media {
	case "application/json":
		var head struct {
			Kind string `json:"kind"`
		}
		return json.Unmarshal(body, &head) == nil && head.Kind == "Status"
	case "application/vnd.kubernetes.protobuf":
		return bytes.HasPrefix(body, protobufMagic)
	}
	return false
}
