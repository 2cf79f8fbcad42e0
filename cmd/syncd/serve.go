package main

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/httpauth"
	"syncd.dev/syncd/internal/leader"
	"syncd.dev/syncd/internal/ui"
	"syncd.dev/syncd/internal/webhook"
)

// The HTTP surface of `syncd run` is two listeners, so that each can be
// exposed on its own (a NetworkPolicy, a Service, an Ingress):
//
//   - --listen (default :8080): /healthz, /readyz, /metrics, /status. For
//     the kubelet, Prometheus and on-call; never for the internet. With
//     --secure-status it is HTTPS, and /metrics and /status need a bearer
//     token that the API server authenticates (TokenReview) and authorizes
//     for the path (SubjectAccessReview, non-resource URL, verb get);
//     health stays open for the kubelet.
//   - --webhook-listen (default off): POST /webhook/{github,gitlab,gitea}.
//     The one port the Git host reaches, through an Ingress.
//   - --ui-listen (default off): the read-only web UI (uilisten.go),
//     HTTPS and guarded like /status under --secure-status, loopback only
//     without it.
//
// The flag names follow controller-runtime's split of metrics, health and
// webhook addresses, keeping syncd's existing --listen for the first.

// serve starts the listeners of f for d (and el, nil without leader
// election); a push webhook polls the sources of pushes.
func serve(f *runFlags, d *daemon.Daemon, el *leader.Elector, reg *prometheus.Registry, cs kubernetes.Interface, uiSrv *ui.Server, pushes []webhook.Poller, log *slog.Logger) (*httpServers, error) {
	guard, err := statusGuard(f, cs, log)
	if err != nil {
		return nil, err
	}
	tlsConfig, err := statusTLS(f)
	if err != nil {
		return nil, err
	}
	req := serveRequest{statusAddr: f.listen, statusTLS: tlsConfig, webhookAddr: f.webhookListen, status: statusRoutes(d, el, reg, f, guard), log: log}
	if f.webhookListen != "" {
		req.webhook = webhookRoutes(pushes, reg, f)
	}
	if uiSrv != nil {
		if req.ui, err = uiRoutes(uiSrv, f, cs, log); err != nil {
			return nil, err
		}
		req.uiAddr = f.uiListen
	}
	return startHTTP(req)
}

// serverLimits are the http.Server bounds of one listener.
type serverLimits struct {
	readHeader, read, write, idle time.Duration
	maxHeaderBytes                int
}

// statusLimits: requests are GETs without a body, from the kubelet,
// Prometheus (scrape timeout 10s by default) or a person. Headers arrive
// in milliseconds, so 5s cuts a slowloris client off; a bearer token (a
// service account's is ~1 KiB, an OIDC one a few) fits 64 KiB of headers;
// idle connections stay 2 minutes, longer than Prometheus's usual scrape
// interval, so a scrape reuses its connection.
var statusLimits = serverLimits{readHeader: 5 * time.Second, read: 10 * time.Second, write: 30 * time.Second, idle: 2 * time.Minute, maxHeaderBytes: 64 << 10}

// webhookLimits: anyone can reach this listener. GitHub gives up on a
// delivery after 10s, so a request (headers and up to webhook.DefaultMaxBody
// of body) that takes more than 15s is not a real one. The write timeout
// runs from the end of the headers and so covers reading the body too.
// Providers send a few KiB of headers.
var webhookLimits = serverLimits{readHeader: 5 * time.Second, read: 15 * time.Second, write: 20 * time.Second, idle: 30 * time.Second, maxHeaderBytes: 32 << 10}

// newServer returns an http.Server for handler with limits.
func newServer(handler http.Handler, l serverLimits, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           handler,
		ReadHeaderTimeout: l.readHeader,
		ReadTimeout:       l.read,
		WriteTimeout:      l.write,
		IdleTimeout:       l.idle,
		MaxHeaderBytes:    l.maxHeaderBytes,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelWarn),
	}
}

// listener is one serving address.
type listener struct {
	name string
	srv  *http.Server
	ln   net.Listener
	// https is decided once, at listen: http.Server.Serve may fill in a
	// TLSConfig of its own (for HTTP/2) on a plain listener, so the
	// server's field cannot tell afterwards.
	https bool
}

// httpServers are the running listeners of `syncd run`.
type httpServers struct{ list []listener }

// serveRequest says what to serve where.
type serveRequest struct {
	statusAddr, webhookAddr string // webhookAddr "": no webhook listener
	uiAddr                  string // "": no UI listener
	// statusTLS, when not nil, makes --listen HTTPS.
	statusTLS           *tls.Config
	status, webhook, ui http.Handler
	log                 *slog.Logger
}

// startHTTP listens on every address of req and serves in the background.
func startHTTP(req serveRequest) (*httpServers, error) {
	s := &httpServers{}
	status := newServer(req.status, statusLimits, req.log)
	status.TLSConfig = req.statusTLS
	if err := s.listen("--listen", req.statusAddr, status); err != nil {
		return nil, err
	}
	if req.webhookAddr != "" {
		if err := s.listen("--webhook-listen", req.webhookAddr, newServer(req.webhook, webhookLimits, req.log)); err != nil {
			s.shutdown()
			return nil, err
		}
	}
	if req.uiAddr != "" {
		// The UI's event streams carry the same bearer tokens: HTTPS
		// whenever --listen is.
		srv := newServer(req.ui, uiLimits, req.log)
		srv.TLSConfig = req.statusTLS
		if err := s.listen("--ui-listen", req.uiAddr, srv); err != nil {
			s.shutdown()
			return nil, err
		}
	}
	for _, l := range s.list {
		go func() { _ = l.srv.Serve(l.ln) }()
	}
	return s, nil
}

func (s *httpServers) listen(flag, addr string, srv *http.Server) error {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		return fmt.Errorf("%s %s: %w", flag, addr, err)
	}
	https := srv.TLSConfig != nil
	if https {
		ln = tls.NewListener(ln, srv.TLSConfig)
	}
	s.list = append(s.list, listener{name: flag, srv: srv, ln: ln, https: https})
	return nil
}

// tls reports whether the listener of flag serves HTTPS.
func (s *httpServers) tls(flag string) bool {
	for _, l := range s.list {
		if l.name == flag {
			return l.https
		}
	}
	return false
}

// addr returns the address the listener of flag serves on, or "".
func (s *httpServers) addr(flag string) string {
	for _, l := range s.list {
		if l.name == flag {
			return l.ln.Addr().String()
		}
	}
	return ""
}

// shutdown stops every listener, letting requests in flight finish for a
// few seconds.
func (s *httpServers) shutdown() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, l := range s.list {
		if err := l.srv.Shutdown(ctx); err != nil {
			_ = l.ln.Close()
		}
	}
}

// checkHTTPFlags refuses half a TLS key pair and a webhook listener that
// could only refuse, and warns when a webhook secret is given but nothing serves webhooks.
func checkHTTPFlags(f *runFlags, log *slog.Logger) error {
	if (f.tlsCertFile == "") != (f.tlsKeyFile == "") {
		return errors.New("--tls-cert-file and --tls-private-key-file go together: give both or neither")
	}
	if f.webhookListen != "" && f.webhookSecret == "" {
		return errors.New("--webhook-listen serves push webhooks, which need --webhook-secret-file (the GitHub/Gitea HMAC key or GitLab token)")
	}
	if f.webhookListen == "" && f.webhookSecret != "" {
		log.Warn("push webhooks are off: --webhook-secret-file is set but --webhook-listen is empty; webhooks are no longer served on --listen, set --webhook-listen (e.g. :9292)")
	}
	return nil
}

// statusRoutes serves health, metrics and status. guard, when not nil,
// protects /metrics and /status; el is nil without leader election.
func statusRoutes(d *daemon.Daemon, el *leader.Elector, reg *prometheus.Registry, f *runFlags, guard *httpauth.Guard) http.Handler {
	protect := func(h http.Handler) http.Handler {
		if guard == nil {
			return h
		}
		return guard.Wrap(h)
	}
	mux := http.NewServeMux()
	mux.Handle("/metrics", protect(promhttp.HandlerFor(reg, promhttp.HandlerOpts{})))
	mux.Handle("/status", protect(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) {
		w.Header().Set("Content-Type", "application/json")
		enc := json.NewEncoder(w)
		enc.SetIndent("", "  ")
		_ = enc.Encode(map[string]any{"apps": d.Status(), "configError": d.ConfigError()})
	})))
	mux.HandleFunc("/healthz", func(w http.ResponseWriter, _ *http.Request) { fmt.Fprintln(w, "ok") })
	mux.HandleFunc("/readyz", func(w http.ResponseWriter, _ *http.Request) {
		code, body := readiness(el, d, f)
		if code != http.StatusOK {
			http.Error(w, body, code)
			return
		}
		fmt.Fprintln(w, body)
	})
	return mux
}

// The daemon polls the config file's sources for a push; runningApps
// the GitSources of App objects.
var _ webhook.Poller = (*daemon.Daemon)(nil)

// webhookRoutes serves the push webhooks and nothing else: a push polls
// the sources of pollers.
func webhookRoutes(pollers []webhook.Poller, reg *prometheus.Registry, f *runFlags) http.Handler {
	secret := func() ([]byte, error) {
		b, err := os.ReadFile(f.webhookSecret)
		return []byte(strings.TrimSpace(string(b))), err
	}
	mux := http.NewServeMux()
	mux.Handle("/webhook/", webhook.NewHandler(secret, pollers, reg))
	return mux
}

// statusGuard returns the TokenReview/SubjectAccessReview guard of
// --secure-status, or nil without it.
func statusGuard(f *runFlags, cs kubernetes.Interface, log *slog.Logger) (*httpauth.Guard, error) {
	if !f.secureStatus {
		return nil, nil
	}
	return httpauth.New(cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews(), httpauth.Options{
		OnError: func(err error) { log.Error("--secure-status: could not review a request", "error", err.Error()) },
	})
}
