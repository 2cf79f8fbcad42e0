package ui

import (
	"bytes"
	"embed"
	"errors"
	"fmt"
	"html/template"
	"net/http"
	"strconv"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/appedit"
	"syncd.dev/syncd/internal/apptree"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

//go:embed templates
var templateFS embed.FS

// pageNames are the pages, each templates/<name>.html over
// templates/layout.html.
var pageNames = []string{"apps", "app", "object", "drift", "plan"}

// pages are the parsed page templates.
type pages struct {
	byName map[string]*template.Template
}

func parsePages() (*pages, error) {
	p := &pages{byName: map[string]*template.Template{}}
	for _, name := range pageNames {
		t, err := template.New(name).Funcs(templateFuncs).ParseFS(templateFS, "templates/layout.html", "templates/"+name+".html")
		if err != nil {
			return nil, fmt.Errorf("ui: template %s: %w", name, err)
		}
		p.byName[name] = t
	}
	return p, nil
}

// templateFuncs are the helpers the templates call.
var templateFuncs = template.FuncMap{
	"short":  shortRevision,
	"when":   when,
	"count":  count,
	"refURL": func(app AppRef, r planner.ObjectRef) string { return "/object?" + objectQuery(app, r) },
	"whenMeta": func(t *metav1.Time) string {
		if t == nil {
			return when(nil)
		}
		tt := t.Time
		return when(&tt)
	},
	"outcome":  func(o apptree.Object) string { return o.Action() },
	"managers": apptree.ManagersText,
	"add":      func(a, b int) int { return a + b },
	"deref":    func(r *planner.ObjectRef) planner.ObjectRef { return *r },
	"appURL":   func(app AppRef) string { return "/app?" + appQuery(app).Encode() },
	"planURL":  func(app AppRef) string { return "/plan?" + appQuery(app).Encode() },
	"culprit":  culprit,
	"findingValue": func(v any) string {
		if v == nil {
			return "(absent)"
		}
		return scalarText(v)
	},
}

// shortRevision shortens a revision's commit SHA to 12 characters, the
// way it reads in a table: "main@sha1:4f2c9a1e7d3b…" keeps its ref.
func shortRevision(rev string) string {
	if rev == "" {
		return "—"
	}
	prefix, sha := "", rev
	if i := strings.LastIndex(rev, ":"); i >= 0 {
		prefix, sha = rev[:i+1], rev[i+1:]
	}
	if len(sha) > 12 {
		sha = sha[:12]
	}
	return prefix + sha
}

// when formats a time in UTC to the second; "—" for none.
func when(t *time.Time) string {
	if t == nil {
		return "—"
	}
	return t.UTC().Format(time.RFC3339)
}

// count is a count, or "—" when unknown (negative).
func count(n int) string {
	if n < 0 {
		return "—"
	}
	return strconv.Itoa(n)
}

// culprit names a finding's culprit and when it wrote: its first owner
// that is not one of syncd's managers.
func culprit(f *drift.Finding) string {
	for _, o := range f.Owners {
		if o.Manager == f.Culprit {
			return fmt.Sprintf("%s (%s%s, %s)", o.Manager, o.Operation, subresource(o.Subresource), when(o.Time))
		}
	}
	if f.Culprit != "" {
		return f.Culprit
	}
	return "unknown (the API server does not record who removed a field)"
}

func subresource(s string) string {
	if s == "" {
		return ""
	}
	return " /" + s
}

// render writes a page; a template error is a 500 with nothing of the
// half-written page.
func (s *Server) render(w http.ResponseWriter, name string, data map[string]any) {
	s.renderStatus(w, http.StatusOK, name, data)
}

// renderStatus is render with a status code.
func (s *Server) renderStatus(w http.ResponseWriter, code int, name string, data map[string]any) {
	var buf bytes.Buffer
	if err := s.pages.byName[name].ExecuteTemplate(&buf, "layout", data); err != nil {
		http.Error(w, "syncd ui: render "+name+": "+redact.Error(err), http.StatusInternalServerError)
		return
	}
	w.Header().Set("Content-Type", "text/html; charset=utf-8")
	w.WriteHeader(code)
	_, _ = w.Write(buf.Bytes())
}

// fail writes an error page with the status httpStatus gives and the
// API server's message, scrubbed of values.
func (s *Server) fail(w http.ResponseWriter, err error) {
	code := httpStatus(err)
	s.renderStatus(w, code, "apps", map[string]any{"Title": http.StatusText(code), "Error": redact.Error(err)})
}

// httpStatus is the status of a page that failed with err: 404 for what
// does not exist, 403 for what the user's RBAC refuses, 409 for a
// reconcile request of a suspended App, else 502 (the
// cluster failed the request).
func httpStatus(err error) int {
	switch {
	case errors.Is(err, errNotFound):
		return http.StatusNotFound
	case isForbidden(err):
		return http.StatusForbidden
	case errors.Is(err, appedit.ErrSuspended):
		return http.StatusConflict
	}
	return http.StatusBadGateway
}
