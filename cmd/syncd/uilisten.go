package main

import (
	"errors"
	"fmt"
	"log/slog"
	"net/http"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/httpauth"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
	"syncd.dev/syncd/internal/ui"
)

// uiPath is the non-resource URL a user must be allowed "get" on to read
// the UI of `syncd run --ui-listen` under --secure-status: one grant for
// every page (ClusterRole rule nonResourceURLs: [/ui], verbs: [get]).
const uiPath = "/ui"

// uiLimits: the UI's pages are GETs without a body; its live updates are
// event streams that stay open, so there is no write timeout.
var uiLimits = serverLimits{readHeader: 5 * time.Second, read: 10 * time.Second, idle: 2 * time.Minute, maxHeaderBytes: 64 << 10}

// errUIListenOpen refuses --ui-listen on a non-loopback address without
// --secure-status.
var errUIListenOpen = errors.New("without --secure-status the UI has no authentication, so --ui-listen takes a loopback address only (reach it with kubectl port-forward); " +
	"give 127.0.0.1:PORT, or add --secure-status to require a bearer token allowed get on " + uiPath)

// daemonUI is the read-only UI of --ui-listen, read with the daemon's own
// credentials (its ServiceAccount); nil without the flag.
func daemonUI(f *runFlags, cl *cluster, inv *inventory.Manager, d *daemon.Daemon) (*ui.Server, error) {
	if f.uiListen == "" {
		return nil, nil
	}
	opts := ui.Options{Dynamic: cl.dynamic, Mapper: cl.mapper, Inventory: inv, InventoryNamespace: f.inventory.namespace, FileStatus: daemonStatus{d}, FileSource: daemonStatus{d}.source,
		Sensitive: daemonStatus{d}.sensitive}
	if f.secureStatus {
		// Every request carries a bearer token, which a rebinding
		// page cannot: any Host (an Ingress's) may be served.
		opts.AnyHost = true
	} else if _, err := loopbackHost(f.uiListen); err != nil {
		return nil, fmt.Errorf("--ui-listen %s: %w", f.uiListen, errUIListenOpen)
	}
	return ui.New(opts)
}

// daemonStatus gives the UI the status the daemon keeps of the file's
// apps (its /status).
type daemonStatus struct{ d *daemon.Daemon }

var _ ui.FileStatusSource = daemonStatus{}

// FileStatus is the daemon's status of each app, by name.
func (s daemonStatus) FileStatus() map[string]ui.FileAppStatus {
	out := map[string]ui.FileAppStatus{}
	for _, st := range s.d.Status() {
		out[st.App] = fileAppStatus(st)
	}
	return out
}

// source is the source the daemon's app reads, as its status names it.
func (s daemonStatus) source(app string) (string, bool) {
	for _, st := range s.d.Status() {
		if st.App == app && st.Source != "" {
			return st.Source, true
		}
	}
	return "", false
}

// sensitive are the redaction rules of a file app of the daemon's
// config; an App object's are the built-in ones (and the values the
// process knows to be secret, which the UI masks in every object).
func (s daemonStatus) sensitive(app ui.AppRef) *redact.Rules {
	if app.Namespace != "" {
		return nil
	}
	return s.d.Sensitive(app.Name)
}

// fileAppStatus is one app's daemon status as the UI shows it: Ready
// when its last reconcile applied everything, Unknown before the first.
func fileAppStatus(st daemon.AppStatus) ui.FileAppStatus {
	out := ui.FileAppStatus{Ready: string(metav1.ConditionFalse), Message: "last reconcile: " + string(st.Result),
		Drift: st.Findings, Conflicts: st.Conflicts, Overlaps: st.Overlaps}
	switch st.Result {
	case reconcile.ResultOK:
		out.Ready = string(metav1.ConditionTrue)
	case daemon.ResultPending:
		out.Ready = string(metav1.ConditionUnknown)
	}
	if st.Error != "" {
		out.Message += ": " + redact.Known(st.Error)
	}
	if !st.LastRun.IsZero() {
		t := st.LastRun.UTC()
		out.LastSync = &t
	}
	return out
}

// uiRoutes guards the UI under --secure-status: every request needs a
// token whose user may get uiPath.
func uiRoutes(srv *ui.Server, f *runFlags, cs kubernetes.Interface, log *slog.Logger) (http.Handler, error) {
	if !f.secureStatus {
		return srv.Handler(), nil
	}
	g, err := httpauth.New(cs.AuthenticationV1().TokenReviews(), cs.AuthorizationV1().SubjectAccessReviews(), httpauth.Options{
		Grant:   "a ClusterRole with the rule nonResourceURLs: [" + uiPath + "], verbs: [get]; docs/ui.md",
		OnError: func(err error) { log.Error("--ui-listen: could not review a request", "error", err.Error()) },
	})
	if err != nil {
		return nil, err
	}
	return g.WrapAs(uiPath, srv.Handler()), nil
}
