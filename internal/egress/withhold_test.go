package egress

import (
	"context"
	"encoding/pem"
	"fmt"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/rest"
)

// answer is what a test server sends to every request.
type answer struct {
	status      int
	contentType string
	body        string
	location    string
}

// serve starts a TLS server that sends a, and counts the requests to
// /elsewhere (where a redirect points).
func serve(t *testing.T, a answer, elsewhere *atomic.Int32) *httptest.Server {
	t.Helper()
	srv := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if r.URL.Path == "/elsewhere" {
			elsewhere.Add(1)
			fmt.Fprint(w, `{"major":"1","minor":"99","gitVersion":"v1.99.0"}`)
			return
		}
		if a.location != "" {
			w.Header().Set("Location", a.location)
		}
		w.Header().Set("Content-Type", a.contentType)
		w.WriteHeader(a.status)
		fmt.Fprint(w, a.body)
	}))
	t.Cleanup(srv.Close)
	return srv
}

// clientFor is a rest config for srv over the wrapper, as syncd makes a
// remote cluster's.
func clientFor(srv *httptest.Server) *rest.Config {
	cfg := &rest.Config{Host: srv.URL, Timeout: 5 * time.Second}
	cfg.CAData = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: srv.Certificate().Raw})
	cfg.Wrap(WithholdErrorBodies)
	return cfg
}

// TestWithholdErrorBodies asks a server for its version through
// client-go over the wrapper (decoding a status, as the dynamic client
// does): an error answer's body reaches the error
// only when it is a Kubernetes status, a redirect is not followed, and
// the failure is named by its HTTP status.
func TestWithholdErrorBodies(t *testing.T) {
	const secret = "SECRET-BODY"
	status := `{"kind":"Status","apiVersion":"v1","status":"Failure","message":"version \"x\" not found","reason":"NotFound","code":404}`
	tests := map[string]struct {
		answer    answer
		failure   string
		says      string // the error says this
		notFound  bool
		elsewhere int32
	}{
		"text 500":        {answer: answer{status: 500, contentType: "text/plain", body: secret}, failure: "HTTP 500", says: "not shown"},
		"html 401":        {answer: answer{status: 401, contentType: "text/html", body: "<p>" + secret + "</p>"}, failure: FailureUnauthorized},
		"json not status": {answer: answer{status: 502, contentType: "application/json", body: `{"secret":"` + secret + `"}`}, failure: "HTTP 502"},
		"api status":      {answer: answer{status: 404, contentType: "application/json", body: status}, failure: "HTTP 404", says: `version "x" not found`, notFound: true},
		"redirect":        {answer: answer{status: 302, contentType: "text/plain", body: secret, location: "/elsewhere"}, failure: "HTTP 302"},
		"ok":              {answer: answer{status: 200, contentType: "application/json", body: `{"major":"1","minor":"37","gitVersion":"v1.37.2"}`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var elsewhere atomic.Int32
			dc, err := discovery.NewDiscoveryClientForConfig(clientFor(serve(t, tc.answer, &elsewhere)))
			if err != nil {
				t.Fatal(err)
			}
			err = dc.RESTClient().Get().AbsPath("/version").Do(context.Background()).Error()
			if diff := cmp.Diff(tc.failure, Failure(err)); diff != "" {
				t.Errorf("Failure(%v) (-want +got):\n%s", err, diff)
			}
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("the error shows the body: %v", err)
			}
			if tc.says != "" && (err == nil || !strings.Contains(err.Error(), tc.says)) {
				t.Errorf("error %v does not say %q", err, tc.says)
			}
			if got := apierrors.IsNotFound(err); got != tc.notFound {
				t.Errorf("IsNotFound = %v, want %v (%v)", got, tc.notFound, err)
			}
			if got := elsewhere.Load(); got != tc.elsewhere {
				t.Errorf("%d requests followed the redirect, want %d", got, tc.elsewhere)
			}
		})
	}
}

// TestFailure names real connection failures by their kind.
func TestFailure(t *testing.T) {
	closed := httptest.NewServer(http.NotFoundHandler())
	closedURL := closed.URL
	closed.Close()
	plain := httptest.NewServer(http.NotFoundHandler())
	defer plain.Close()
	untrusted := httptest.NewTLSServer(http.NotFoundHandler())
	defer untrusted.Close()
	slow := httptest.NewTLSServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		<-r.Context().Done()
	}))
	defer slow.Close()
	tests := map[string]struct {
		cfg  *rest.Config
		want string
	}{
		"refused":    {cfg: &rest.Config{Host: strings.Replace(closedURL, "http://", "https://", 1)}, want: FailureRefused},
		"plain http": {cfg: &rest.Config{Host: strings.Replace(plain.URL, "http://", "https://", 1)}, want: FailureTLSPlainHTTP},
		"unknown CA": {cfg: &rest.Config{Host: untrusted.URL}, want: FailureTLSAuthority},
		"dns":        {cfg: &rest.Config{Host: "https://no-such-host.invalid"}, want: FailureDNS},
		"timeout":    {cfg: &rest.Config{Host: slow.URL, Timeout: 200 * time.Millisecond, TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: slow.Certificate().Raw})}}, want: FailureTimeout},
		"wrong name": {cfg: &rest.Config{Host: strings.Replace(untrusted.URL, "127.0.0.1", "localhost", 1), TLSClientConfig: rest.TLSClientConfig{CAData: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: untrusted.Certificate().Raw})}}, want: FailureTLSHostname},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.cfg.Wrap(WithholdErrorBodies)
			OwnRESTTransport(tc.cfg)
			dc, err := discovery.NewDiscoveryClientForConfig(tc.cfg)
			if err != nil {
				t.Fatal(err)
			}
			_, err = dc.ServerVersion()
			if diff := cmp.Diff(tc.want, Failure(err)); diff != "" {
				t.Errorf("Failure(%v) (-want +got):\n%s", err, diff)
			}
		})
	}
	if got := Failure(context.Canceled); got != FailureNotAPIAnswer {
		t.Errorf("Failure(context.Canceled) = %q, want %q", got, FailureNotAPIAnswer)
	}
}
