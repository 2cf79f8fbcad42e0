package egress

import (
	"net"
	"net/http"
	"time"
)

// Go's default transport settings (net/http's DefaultTransport), written
// out rather than copied from it: by the time a client is built,
// http.DefaultTransport is the refusing one.
const (
	dialTimeout           = 30 * time.Second
	dialKeepAlive         = 30 * time.Second
	maxIdleConns          = 100
	idleConnTimeout       = 90 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	expectContinueTimeout = time.Second
)

// Transport returns a new HTTP transport with Go's default settings:
// the proxy from the environment (HTTPS_PROXY, NO_PROXY), dial, keep-alive
// and TLS handshake timeouts, HTTP/2 when the server offers it, and the
// default idle connection limits. Callers may change their copy (TLS
// roots, say); each call returns a transport of its own.
func Transport() *http.Transport {
	dialer := &net.Dialer{Timeout: dialTimeout, KeepAlive: dialKeepAlive}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dialer.DialContext,
		ForceAttemptHTTP2:     true,
		MaxIdleConns:          maxIdleConns,
		IdleConnTimeout:       idleConnTimeout,
		TLSHandshakeTimeout:   tlsHandshakeTimeout,
		ExpectContinueTimeout: expectContinueTimeout,
	}
}

// Client returns an HTTP client on a new Transport, with no overall
// timeout (callers bound requests with their context).
func Client() *http.Client {
	return &http.Client{Transport: Transport()}
}
