// Package ui is syncd's web UI, the ownership map: server-rendered pages
// (html/template, embedded stylesheet, no JavaScript needed) of the apps
// (App objects and file apps' inventories), an app's objects by stage, and
// an object's live YAML with the field manager(s) of every field, the
// fields the app declares, shared fields and drifted fields with their
// culprit.
//
// Ownership is decoded once by package ownership (structured-merge-diff
// field sets); list items are matched to the managers' key elements. Values
// are redacted by package redact before they reach a template; drift
// findings come from a DriftSource (the one-shot check of `syncd drift`),
// already redacted.
//
// The Server reads with the clients it is given (the user's own
// credentials in `syncd ui`) and writes nothing. Its handler refuses a
// Host header that is not a loopback name or one of Options.Hosts (DNS
// rebinding), serves GET and HEAD only, and sets a strict
// Content-Security-Policy and no-framing headers on every response.
//
// Not guaranteed: the UI does not authenticate whoever connects; a local
// user who can reach the loopback port reads what its credentials read.
// A file app's status (drift counts, last sync) lives in its daemon's
// /status and is not shown; an App object's drift findings are counted,
// not listed (only a render tells what Git declares).
package ui
