package ui

import (
	"net"
	"net/http"
	"slices"
	"strings"
)

// contentSecurityPolicy allows the page's own stylesheet and script and
// nothing else: no inline script or style, no framing, no other origin,
// forms only to the UI itself.
const contentSecurityPolicy = "default-src 'none'; script-src 'self'; style-src 'self'; img-src 'self'; connect-src 'self'; " +
	"base-uri 'none'; form-action 'self'; frame-ancestors 'none'"

// loopbackHosts are the Host names a local UI always answers to.
var loopbackHosts = []string{"localhost", "127.0.0.1", "::1"}

// guard refuses requests the UI never serves (a Host that is not the
// UI's own, a method other than GET or HEAD but the buttons' POST) and sets the security
// headers on every response.
func (s *Server) guard(next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		setSecurityHeaders(w.Header())
		if !s.opts.AnyHost && !s.allowedHost(r.Host) {
			http.Error(w, "syncd ui: Host "+r.Host+" is not this UI's address; open it as http://localhost or by the address syncd ui printed", http.StatusMisdirectedRequest)
			return
		}
		if !s.allowedMethod(r) {
			w.Header().Set("Allow", "GET, HEAD")
			http.Error(w, "syncd ui: method "+r.Method+" not allowed", http.StatusMethodNotAllowed)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// allowedMethod reports whether the UI serves r's method: GET and HEAD,
// and POST to the buttons' path when they are on (Options.Actions).
func (s *Server) allowedMethod(r *http.Request) bool {
	switch r.Method {
	case http.MethodGet, http.MethodHead:
		return true
	case http.MethodPost:
		return s.opts.Actions && r.URL.Path == actionPath
	}
	return false
}

// setSecurityHeaders sets the headers every response carries.
func setSecurityHeaders(h http.Header) {
	h.Set("Content-Security-Policy", contentSecurityPolicy)
	h.Set("X-Frame-Options", "DENY")
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cross-Origin-Opener-Policy", "same-origin")
	h.Set("Cross-Origin-Resource-Policy", "same-origin")
	h.Set("Cache-Control", "no-store")
}

// allowedHost reports whether a request's Host header names the UI: a
// loopback name or one of Options.Hosts, with any port. A DNS-rebinding
// page reaches the UI under its own host name, which is refused.
func (s *Server) allowedHost(hostport string) bool {
	host := hostport
	if h, _, err := net.SplitHostPort(hostport); err == nil {
		host = h
	}
	host = strings.ToLower(strings.Trim(host, "[]"))
	return slices.Contains(loopbackHosts, host) || slices.Contains(s.opts.Hosts, host)
}
