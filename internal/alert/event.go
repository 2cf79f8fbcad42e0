package alert

import (
	"crypto/sha256"
	"encoding/hex"
	"sort"
	"strings"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// Event is one thing worth telling people about: a drifted or conflicting
// object, a hand-off of fields between managers, a prune, an error or a
// sync. The daemon fills it from the result of a stage; this package does
// not import those stages.
type Event struct {
	// Type is one of the Event* constants ("drift", "conflict", ...).
	Type string
	// App is the name of the app the object belongs to.
	App string
	// Revision is the Git revision applied, e.g. "main@sha1:3f2a…" or a
	// SHA with its tag.
	Revision string
	// Object is the Kubernetes object concerned; it is empty for events about
	// a whole app (a sync or an error before any object was read).
	Object ObjectRef
	// Summary is one line saying what happened.
	Summary string
	// Cause tells apart the findings of one type on one object that have
	// no fields: an error alert's cause (see Failures). Findings with
	// different causes are different findings, opened and resolved
	// apart; "" for every other event.
	Cause string
	// Fields are the fields concerned, in the order they should be shown.
	Fields []Field
	// Resolved reports that a finding has cleared: the one identified by
	// Type, App, Object, Cause, field paths and classes and culprit
	// managers; if none matches exactly, those on the Object with the same
	// Cause and field paths; with no Fields, every open finding of that
	// Type and Cause on that Object.
	Resolved bool
	// Time is when the event was observed; zero means "now" by the
	// Notifier's clock.
	Time time.Time
}

// ObjectRef names a Kubernetes object.
type ObjectRef struct {
	APIVersion string
	Kind       string
	Namespace  string
	Name       string
}

// String returns "apiVersion Kind namespace/name" ("apps/v1 Deployment
// web/frontend"), without the namespace for cluster-scoped objects, or ""
// for the zero ObjectRef.
func (o ObjectRef) String() string {
	if o == (ObjectRef{}) {
		return ""
	}
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + o.Name
	}
	return strings.TrimSpace(o.APIVersion + " " + o.Kind + " " + name)
}

// Field is one field of Object that the event is about.
type Field struct {
	// Path uses the API server's field path notation (".spec.replicas",
	// ".data.password").
	Path string
	// FieldPath is Path as a structured path, which Redact matches
	// against package redact's rules; a Secret's field without one is
	// hidden.
	FieldPath fieldpath.Path
	// Class says what kind of finding this is for the field: a drift
	// class ("taken-over", "shared", "value-drift", "flapping", ...),
	// "conflict" or "handoff-pending".
	Class string
	// Desired is the value Git asks for, rendered as the producer sees fit
	// (JSON for structured values); "" means the field is not in Git.
	Desired string
	// Live is the value in the cluster; "" means the field is not set.
	Live string
	// Culprit is the last writer of the live value, when known.
	Culprit Culprit
	// Sensitive marks a field the config declares sensitive: its Desired
	// and Live values are never sent.
	Sensitive bool
}

// Culprit is the managedFields entry that last wrote a field.
type Culprit struct {
	Manager     string
	Operation   string // "Apply" or "Update"
	Subresource string // "", "status", "scale", ...
	Time        time.Time
}

// findingEvents are the event types that describe a condition which lasts
// until it clears (and so are remembered until a Resolved event arrives);
// the other types describe something that happened once at a revision.
var findingEvents = map[string]bool{
	EventDrift:    true,
	EventOverlap:  true,
	EventConflict: true,
	EventError:    true,
}

// isFinding reports whether events of type t stay open until resolved.
func isFinding(t string) bool { return findingEvents[t] }

// objectKey identifies the (type, app, object, cause) an event is about.
func objectKey(ev Event) string {
	parts := []string{ev.Type, ev.App, ev.Object.APIVersion, ev.Object.Kind, ev.Object.Namespace, ev.Object.Name}
	if ev.Cause != "" {
		// Only then: the keys (and fingerprints) of events without a
		// cause stay what they were.
		parts = append(parts, ev.Cause)
	}
	return strings.Join(parts, "\x00")
}

// dedupeKey identifies a finding: its type, app and object, the sorted set
// of its field paths with their classes, and the sorted set of culprit
// managers. One-shot events (sync, prune, handoff) also include the
// revision, so the same thing at a new revision is told again.
func dedupeKey(ev Event) string {
	fields := make([]string, 0, len(ev.Fields))
	managers := make([]string, 0, len(ev.Fields))
	for _, f := range ev.Fields {
		fields = append(fields, f.Path+"\x01"+f.Class)
		if f.Culprit.Manager != "" {
			managers = append(managers, f.Culprit.Manager)
		}
	}
	fields = sortedUnique(fields)
	managers = sortedUnique(managers)
	parts := []string{objectKey(ev), strings.Join(fields, "\x02"), strings.Join(managers, "\x02")}
	if !isFinding(ev.Type) {
		parts = append(parts, ev.Revision)
	}
	return strings.Join(parts, "\x03")
}

// pathsKey is the sorted set of an event's field paths.
func pathsKey(ev Event) string {
	paths := make([]string, 0, len(ev.Fields))
	for _, f := range ev.Fields {
		paths = append(paths, f.Path)
	}
	return strings.Join(sortedUnique(paths), "\x02")
}

// fingerprint is the short, stable hash of a dedupe key that receivers use
// to pair an open alert with its resolved message.
func fingerprint(key string) string {
	sum := sha256.Sum256([]byte(key))
	return hex.EncodeToString(sum[:12])
}

func sortedUnique(s []string) []string {
	sort.Strings(s)
	out := s[:0]
	for i, v := range s {
		if i == 0 || v != s[i-1] {
			out = append(out, v)
		}
	}
	return out
}
