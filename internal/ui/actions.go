package ui

import (
	"crypto/rand"
	"crypto/subtle"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"time"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/appedit"
	"syncd.dev/syncd/internal/redact"
)

// actionPath is where the App page's buttons post.
const actionPath = "/action"

// csrfField is the forms' hidden field that carries the server's CSRF
// token.
const csrfField = "csrf"

// Action is one of the App page's buttons: the edit of its `syncd
// reconcile|suspend|resume app` command.
type Action struct {
	// Name is the form's value ("reconcile", "suspend", "resume").
	Name  string
	Label string
	edit  appedit.Edit
}

// actions are the buttons, by form value.
var actions = []Action{
	{Name: "reconcile", Label: "Reconcile now", edit: appedit.Reconcile},
	{Name: "suspend", Label: "Suspend", edit: appedit.Suspend},
	{Name: "resume", Label: "Resume", edit: appedit.Resume},
}

func actionNamed(name string) (Action, bool) {
	for _, a := range actions {
		if a.Name == name {
			return a, true
		}
	}
	return Action{}, false
}

// newCSRFToken is a server's random token: a form that does not carry it
// was not served by this server.
func newCSRFToken() (string, error) {
	b := make([]byte, 32)
	if _, err := rand.Read(b); err != nil {
		return "", fmt.Errorf("ui: CSRF token: %w", err)
	}
	return base64.RawURLEncoding.EncodeToString(b), nil
}

// errCSRF refuses a POST that another site could have sent.
var errCSRF = errors.New("the form did not come from this UI (its token or Origin does not match); reload the page and try again")

// checkForm refuses a POST whose Origin is another site's or whose form
// does not carry the server's token.
func (s *Server) checkForm(r *http.Request) error {
	if o := r.Header.Get("Origin"); o != "" {
		u, err := url.Parse(o)
		if err != nil || u.Host != r.Host {
			return errCSRF
		}
	}
	if subtle.ConstantTimeCompare([]byte(r.PostFormValue(csrfField)), []byte(s.csrf)) != 1 {
		return errCSRF
	}
	return nil
}

// serveAction makes an App page button's edit with the user's
// credentials, then sends the browser back to the App page with what it
// did (POST, redirect, GET: reloading does not repeat it). A refusal,
// the API server's RBAC included, is shown on the App page with its
// message.
func (s *Server) serveAction(w http.ResponseWriter, r *http.Request) {
	r.Body = http.MaxBytesReader(w, r.Body, 16<<10)
	if err := s.checkForm(r); err != nil {
		http.Error(w, "syncd ui: "+err.Error(), http.StatusForbidden)
		return
	}
	ref := AppRef{Namespace: r.PostFormValue("ns"), Name: r.PostFormValue("app")}
	act, ok := actionNamed(r.PostFormValue("action"))
	if !ok || ref.File() || ref.Name == "" {
		http.Error(w, "syncd ui: a button names an App object (ns, app) and one of reconcile, suspend, resume", http.StatusBadRequest)
		return
	}
	apps := s.opts.Dynamic.Resource(v1alpha1.AppResource).Namespace(ref.Namespace)
	_, err := appedit.Apply(r.Context(), apps, appedit.Request{Namespace: ref.Namespace, Name: ref.Name, Now: time.Now()}, act.edit)
	if err != nil {
		s.serveAppStatus(w, r, ref, httpStatus(err), redact.Error(err))
		return
	}
	q := appQuery(ref)
	q.Set("done", act.Name)
	http.Redirect(w, r, "/app?"+q.Encode(), http.StatusSeeOther)
}

// doneMessage is the flash of a redirect after an action ("" for none).
func doneMessage(ref AppRef, name string) string {
	act, ok := actionNamed(name)
	if !ok {
		return ""
	}
	return fmt.Sprintf("App %s %s", ref, act.edit.Verb)
}
