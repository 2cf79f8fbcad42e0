package ui

import (
	"context"
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"net/http"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/preview"
	"syncd.dev/syncd/internal/redact"
)

//go:embed static
var staticFS embed.FS

// InventoryReader reads an app's inventory (inventory.Manager.Load).
type InventoryReader interface {
	Load(ctx context.Context, app string) (*inventory.Inventory, error)
}

// DriftSource tells an app's drift findings (a one-shot drift check, as
// `syncd drift` runs). It returns a nil report for an app it does not
// know.
type DriftSource interface {
	Drift(ctx context.Context, app AppRef) (*drift.Report, error)
}

// PlanSource previews what applying an app's source as it is now would
// change (`syncd plan`: server-side dry runs under the app's managers,
// nothing written). It returns a nil report for an app it cannot
// preview, and an error that says why for one it could not.
type PlanSource interface {
	Plan(ctx context.Context, app AppRef) (*preview.Report, error)
}

// Options configure a Server.
type Options struct {
	// Dynamic and Mapper read the cluster, with the credentials of whoever
	// runs the UI; required.
	Dynamic dynamic.Interface
	Mapper  meta.RESTMapper
	// Inventory reads the apps' inventories; required.
	Inventory InventoryReader
	// InventoryNamespace holds the file apps' inventory Secrets;
	// required.
	InventoryNamespace string
	// Drift, when set, gives the file apps' drift findings; without it
	// the Object page shows ownership only.
	Drift DriftSource
	// Plans, when set, previews an app's next revision on its Plan page
	// (/plan), linked from the App page; without it the App page says to
	// run syncd plan.
	Plans PlanSource
	// FileStatus, when set, gives the status of the file apps a daemon
	// runs (syncd run --ui-listen): their Ready, drift, conflicts and
	// overlaps instead of what the inventory alone tells.
	FileStatus FileStatusSource
	// Sensitive, when set, gives the redaction rules of a file app (its
	// syncd.yaml sensitive paths, package redact), applied to every
	// object the app's pages print; nil, or a nil result: the built-in
	// rules only. An App object's rules are read from its spec. Values
	// the process knows to be secret (redact.Remember) are masked in
	// every object whatever it returns.
	Sensitive func(app AppRef) *redact.Rules
	// FileSource, when set, names the source (its name in the syncd.yaml)
	// a file app reads; the Apps and App pages show it, else
	// "syncd.yaml".
	FileSource func(app string) (string, bool)
	// Actions shows the App page's buttons (reconcile now, suspend,
	// resume) and serves their POSTs, made with Dynamic: the user's own
	// credentials in syncd ui. Off, the UI is read-only and refuses every
	// POST.
	Actions bool
	// AnyHost serves any Host header: for a UI behind a bearer-token
	// guard (syncd run --ui-listen with --secure-status), which a
	// DNS-rebinding page cannot pass.
	AnyHost bool
	// Hosts are the host names (without port) requests may name in
	// their Host header besides the loopback ones (localhost, 127.0.0.1,
	// ::1): the configured address's host. Any other Host is refused, so
	// a web page cannot reach the UI through DNS rebinding.
	Hosts []string
}

// Server serves the UI's pages.
type Server struct {
	opts  Options
	pages *pages
	// csrf is the token every form carries (Options.Actions).
	csrf string
}

// New returns a Server; it checks that the required options are set.
func New(opts Options) (*Server, error) {
	switch {
	case opts.Dynamic == nil:
		return nil, errors.New("ui: Dynamic is required")
	case opts.Mapper == nil:
		return nil, errors.New("ui: Mapper is required")
	case opts.Inventory == nil:
		return nil, errors.New("ui: Inventory is required")
	case opts.InventoryNamespace == "":
		return nil, errors.New("ui: InventoryNamespace is required: the namespace of the apps' inventory Secrets")
	}
	p, err := parsePages()
	if err != nil {
		return nil, err
	}
	token, err := newCSRFToken()
	if err != nil {
		return nil, err
	}
	return &Server{opts: opts, pages: p, csrf: token}, nil
}

// Handler returns the UI's HTTP handler: its pages and static assets
// behind the security checks (allowedHost, securityHeaders; only GET and
// HEAD).
func (s *Server) Handler() http.Handler {
	mux := http.NewServeMux()
	static, err := fs.Sub(staticFS, "static")
	if err != nil {
		panic(fmt.Sprintf("ui: embedded static assets: %v", err))
	}
	mux.Handle("GET /static/", http.StripPrefix("/static/", http.FileServerFS(static)))
	mux.HandleFunc("GET /{$}", s.serveApps)
	mux.HandleFunc("GET /app", s.serveApp)
	mux.HandleFunc("GET /object", s.serveObject)
	mux.HandleFunc("GET /drift", s.serveFeed)
	if s.opts.Plans != nil {
		mux.HandleFunc("GET /plan", s.servePlan)
	}
	mux.HandleFunc("GET /events", s.serveEvents)
	if s.opts.Actions {
		mux.HandleFunc("POST "+actionPath, s.serveAction)
	}
	return s.guard(mux)
}

func (s *Server) serveApps(w http.ResponseWriter, r *http.Request) {
	rows, warns, err := s.appRows(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	q := r.URL.Query()
	f := appFilter{Query: q.Get("q"), Ready: q.Get("ready"), Drifted: q.Get("drifted") == "1"}
	var kept []AppRow
	for _, row := range rows {
		if f.keep(row) {
			kept = append(kept, row)
		}
	}
	s.render(w, "apps", map[string]any{"Title": "Apps", "Rows": kept, "Total": len(rows), "Filter": f, "Warnings": warns})
}

func (s *Server) serveApp(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	ref := appRefOf(q)
	s.serveAppStatus(w, r, ref, http.StatusOK, doneMessage(ref, q.Get("done")))
}

// serveAppStatus renders an App page with a status code and a flash
// message (what a button did, or why it failed).
func (s *Server) serveAppStatus(w http.ResponseWriter, r *http.Request, ref AppRef, code int, flash string) {
	page, err := s.app(r.Context(), ref)
	switch {
	case err != nil && code != http.StatusOK:
		// The page cannot be shown to this user: the refusal is what
		// they need to read.
		s.renderStatus(w, code, "apps", map[string]any{"Title": http.StatusText(code), "Error": flash})
		return
	case err != nil:
		s.fail(w, err)
		return
	}
	data := map[string]any{"Title": "App " + ref.String(), "Page": page, "Flash": flash, "Failed": code != http.StatusOK, "Plans": s.opts.Plans != nil}
	if s.opts.Actions && !ref.File() {
		data["Actions"], data["CSRF"] = actions, s.csrf
	}
	s.renderStatus(w, code, "app", data)
}

func (s *Server) serveFeed(w http.ResponseWriter, r *http.Request) {
	page, err := s.feed(r.Context())
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "drift", map[string]any{"Title": "Drift", "Page": page})
}

func (s *Server) serveObject(w http.ResponseWriter, r *http.Request) {
	q := r.URL.Query()
	app, ref := appRefOf(q), objectRefOf(q)
	page, err := s.object(r.Context(), app, ref)
	if err != nil {
		s.fail(w, err)
		return
	}
	s.render(w, "object", map[string]any{"Title": ref.String(), "Page": page})
}
