package gitserver

import (
	"context"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync/atomic"
	"time"

	"syncd.dev/syncd/internal/egress"
)

// Slow is a proxy in front of a Server that holds every request for a
// delay before passing it on, to test a Git host that answers slowly.
// A repository of the Server at URL/<name>.git is at Slow.URL/<name>.git.
type Slow struct {
	// URL is the proxy's base URL.
	URL string

	srv      *http.Server
	delay    atomic.Int64 // nanoseconds
	requests atomic.Int64
	held     atomic.Int64
}

// NewSlow starts a proxy for the server at target (a Server's URL) on a
// free loopback port, with no delay until SetDelay.
func NewSlow(target string) (*Slow, error) {
	u, err := url.Parse(target)
	if err != nil {
		return nil, fmt.Errorf("gitserver: slow proxy target %q: %w", target, err)
	}
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, fmt.Errorf("gitserver: %w", err)
	}
	s := &Slow{URL: "http://" + l.Addr().String()}
	proxy := httputil.NewSingleHostReverseProxy(u)
	// Not http.DefaultTransport: the test binaries refuse it, as syncd's
	// main does.
	proxy.Transport = egress.Transport()
	s.srv = &http.Server{
		ReadHeaderTimeout: 10 * time.Second,
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			s.requests.Add(1)
			if !s.hold(r.Context()) {
				return
			}
			proxy.ServeHTTP(w, r)
		}),
	}
	go func() { _ = s.srv.Serve(l) }()
	return s, nil
}

// hold waits until the request has waited the delay in force, and
// reports false when its client gave up first. The delay is read again
// as it waits, so SetDelay also shortens (or lengthens) the wait of
// requests already held.
func (s *Slow) hold(ctx context.Context) bool {
	start := time.Now()
	if time.Duration(s.delay.Load()) <= 0 {
		return true
	}
	s.held.Add(1)
	defer s.held.Add(-1)
	tick := time.NewTicker(10 * time.Millisecond)
	defer tick.Stop()
	for time.Since(start) < time.Duration(s.delay.Load()) {
		select {
		case <-tick.C:
		case <-ctx.Done():
			return false
		}
	}
	return true
}

// SetDelay makes every request wait d from its arrival before it is
// served (0: none), requests already held included.
func (s *Slow) SetDelay(d time.Duration) { s.delay.Store(int64(d)) }

// Requests returns how many requests the proxy has received.
func (s *Slow) Requests() int64 { return s.requests.Load() }

// Held returns how many requests are waiting out the delay right now.
func (s *Slow) Held() int64 { return s.held.Load() }

// Close stops the proxy; requests still held end without an answer.
func (s *Slow) Close() error { return s.srv.Close() }
