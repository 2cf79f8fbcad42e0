package ui

import (
	"context"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
)

// objectPage is what the Object page shows.
type objectPage struct {
	App    AppRef
	Ref    planner.ObjectRef
	Map    *OwnerMap
	Drift  []drift.Finding
	Absent []drift.Finding
	// DriftNote says why no drift findings are shown, when none can be.
	DriftNote string
}

// objectRefOf reads an object's reference from the query.
func objectRefOf(q url.Values) planner.ObjectRef {
	return planner.ObjectRef{Group: q.Get("group"), Version: q.Get("version"), Kind: q.Get("kind"), Namespace: q.Get("namespace"), Name: q.Get("name")}
}

// objectQuery is the query of an object's page.
func objectQuery(app AppRef, r planner.ObjectRef) string {
	q := appQuery(app)
	for k, v := range map[string]string{"group": r.Group, "version": r.Version, "kind": r.Kind, "namespace": r.Namespace, "name": r.Name} {
		if v != "" {
			q.Set(k, v)
		}
	}
	return q.Encode()
}

// appQuery is the query that names an app.
func appQuery(app AppRef) url.Values {
	q := url.Values{"app": {app.Name}}
	if app.Namespace != "" {
		q.Set("ns", app.Namespace)
	}
	return q
}

// appRefOf reads an app's reference from the query.
func appRefOf(q url.Values) AppRef { return AppRef{Namespace: q.Get("ns"), Name: q.Get("app")} }

// object builds the Object page: the live object read with the user's
// credentials, its ownership map, and the app's drift findings for it
// when a drift source can tell them.
func (s *Server) object(ctx context.Context, app AppRef, ref planner.ObjectRef) (*objectPage, error) {
	if ref.Version == "" || ref.Kind == "" || ref.Name == "" {
		return nil, fmt.Errorf("the object is named by version, kind and name (and group and namespace): %w", errNotFound)
	}
	live, err := s.get(ctx, ref)
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("%s: %w", ref, errNotFound)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: get: %w", ref, err)
	}
	page := &objectPage{App: app, Ref: ref}
	findings, note := s.findings(ctx, app, ref)
	page.DriftNote = note
	for _, f := range findings {
		page.Drift = append(page.Drift, f)
	}
	var managers []string
	for _, m := range applier.AppManagers(live, app.Inventory()) {
		managers = append(managers, string(m))
	}
	rules, err := s.rules(ctx, app)
	if err != nil {
		return nil, err
	}
	page.Map = buildMap(mapInput{Object: live.Object, Own: ownership.Decode(live), AppManagers: managers, Findings: findings, Rules: rules})
	page.Absent = absentFindings(page.Map, findings)
	return page, nil
}

// rules are the redaction rules of app's objects: its sensitive paths
// (an App object's spec.sensitive, a file app's when the UI knows them,
// Options.Sensitive), with every value the process knows to be secret
// masked inside any string. An App that cannot be read is an error: its
// objects are not shown without its rules.
func (s *Server) rules(ctx context.Context, app AppRef) (*redact.Rules, error) {
	var r *redact.Rules
	switch {
	case !app.File():
		a, err := s.appObject(ctx, app)
		if err != nil {
			return nil, err
		}
		if r, err = reconcile.SensitiveRules(config.App{Name: app.Name, AppSpec: a.Spec.AppSpec}); err != nil {
			return nil, fmt.Errorf("App %s: %w", app, err)
		}
	case s.opts.Sensitive != nil:
		r = s.opts.Sensitive(app)
	}
	return r.WithSecrets(redact.KnownSecrets()), nil
}

// findings returns the app's drift findings of one object, or a note
// saying why there are none to show.
func (s *Server) findings(ctx context.Context, app AppRef, ref planner.ObjectRef) ([]drift.Finding, string) {
	if s.opts.Drift == nil {
		return nil, "drift is computed by syncd ui (a render of the app, as syncd drift runs), not here; this page shows ownership only"
	}
	rep, err := s.opts.Drift.Drift(ctx, app)
	if err != nil {
		return nil, "drift: " + redact.Error(err)
	}
	if rep == nil {
		return nil, "drift of a syncd.yaml app is computed when syncd ui is given that file with --config; " + app.String() + " is not one of its apps"
	}
	var out []drift.Finding
	for _, f := range rep.Findings {
		if sameObject(f.Ref, ref) {
			out = append(out, f)
		}
	}
	return out, ""
}

// sameObject reports whether two refs name one object, whatever the
// version.
func sameObject(a, b planner.ObjectRef) bool {
	return a.Group == b.Group && a.Kind == b.Kind && a.Namespace == b.Namespace && a.Name == b.Name
}

// absentFindings are the findings no line shows: object-level ones and
// fields the live object does not have (removed out of band).
func absentFindings(m *OwnerMap, fs []drift.Finding) []drift.Finding {
	shown := map[string]bool{}
	for _, l := range m.Lines {
		shown[l.Path] = true
	}
	var out []drift.Finding
	for _, f := range fs {
		if !shown[f.Path] {
			out = append(out, f)
		}
	}
	return out
}

// isForbidden reports whether the API server refused a request by RBAC.
func isForbidden(err error) bool { return apierrors.IsForbidden(err) }
