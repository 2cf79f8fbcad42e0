// Package ui is syncd's web UI, the ownership map: server-rendered pages
// (html/template, embedded stylesheet, no JavaScript needed) of the apps
// (App objects and file apps' inventories), an app's objects by stage
// (apptree) with its history, pending handoffs and last reconcile, a
// drift feed across the apps, and an object's live YAML with the field
// manager(s) of every field, the fields the app declares, shared fields
// and drifted fields with their culprit.
//
// Ownership is decoded once by package ownership (structured-merge-diff
// field sets); list items are matched to the managers' key elements. Values
// are redacted by package redact before they reach a template; drift
// findings come from a DriftSource (the one-shot check of `syncd drift`),
// already redacted.
//
// The Server reads with the clients it is given (the user's own
// credentials in `syncd ui`, syncd's in `syncd run --ui-listen`). It
// writes only through the App page's buttons (Options.Actions: the edits
// of package appedit, posted with a per-server CSRF token and no foreign
// Origin). Its handler refuses a Host header that is not a loopback name
// or one of Options.Hosts (DNS rebinding) unless Options.AnyHost (a
// bearer-token guard stands in front), serves GET and HEAD (and the
// buttons' POST) only, and sets a strict Content-Security-Policy and
// no-framing headers on every response.
//
// Not guaranteed: the UI does not authenticate whoever connects; a local
// user who can reach the loopback port reads what its credentials read
// (the daemon's --ui-listen is guarded by cmd/syncd, not here). A file
// app's status (drift counts, last sync) lives in its daemon's /status:
// the UI shows its last recorded apply, and its drift findings only when
// a DriftSource knows it (a render each time). An App object's drift
// findings are counted, not listed (only a render tells what Git
// declares). No plan of the next revision is shown: syncd records what
// its last reconcile did, not what the next would do.
package ui
