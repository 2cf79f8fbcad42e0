package egress

import (
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"strings"
	"testing"
)

// TestForbidRefusesDefaultTransportOnly checks the block: after Forbid
// the default transport refuses (without printing credentials or the
// query), git may use no protocol, while a client on Transport still
// reaches the server; restore puts both back.
func TestForbidRefusesDefaultTransportOnly(t *testing.T) {
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { io.WriteString(w, "ok") }))
	defer srv.Close()
	t.Setenv("GIT_ALLOW_PROTOCOL", "file")
	before := http.DefaultTransport

	restore, err := Forbid()
	if err != nil {
		t.Fatal(err)
	}
	if got := os.Getenv("GIT_ALLOW_PROTOCOL"); got != GitAllowProtocol {
		t.Errorf("GIT_ALLOW_PROTOCOL = %q, want %q", got, GitAllowProtocol)
	}
	req, _ := http.NewRequest(http.MethodGet, strings.Replace(srv.URL, "http://", "http://user:pw@", 1)+"/x?token=s3cret", nil)
	_, err = http.DefaultTransport.RoundTrip(req)
	if err == nil || !strings.Contains(err.Error(), "refused") || strings.Contains(err.Error(), "s3cret") || strings.Contains(err.Error(), "pw@") {
		t.Errorf("default client: %v; want a refusal naming neither credentials nor query", err)
	}
	resp, err := Client().Get(srv.URL)
	if err != nil {
		t.Fatalf("egress client under the block: %v", err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	if string(body) != "ok" {
		t.Errorf("egress client got %q, want ok", body)
	}

	restore()
	if http.DefaultTransport != before {
		t.Error("restore did not put back http.DefaultTransport")
	}
	if got := os.Getenv("GIT_ALLOW_PROTOCOL"); got != "file" {
		t.Errorf("GIT_ALLOW_PROTOCOL after restore = %q, want file", got)
	}
}

// TestTransportIsOwnAndDefaultLike checks that each call returns a
// transport of its own (a caller may set TLS roots on its copy) with
// Go's default behaviour where it matters: the proxy from the
// environment (http.ProxyFromEnvironment reads it once per process, so
// it is not set here), timeouts and HTTP/2.
func TestTransportIsOwnAndDefaultLike(t *testing.T) {
	a, b := Transport(), Transport()
	if a == b {
		t.Fatal("Transport returned the same transport twice")
	}
	if a.Proxy == nil || !a.ForceAttemptHTTP2 || a.DialContext == nil || a.TLSHandshakeTimeout == 0 {
		t.Errorf("transport %+v lacks Go's defaults", a)
	}
}
