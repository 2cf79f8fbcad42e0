package alert

import (
	"bytes"
	"encoding/json"
	"strings"
	"time"
	"unicode/utf16"
)

// States of an alert as sent.
const (
	StateOpen     = "open"
	StateResolved = "resolved"
)

// message is one event as a sink renders it: already redacted, with its
// time set and its dedupe fingerprint.
type message struct {
	sink        string
	ev          Event
	fingerprint string
}

func (m message) state() string {
	if m.ev.Resolved {
		return StateResolved
	}
	return StateOpen
}

var eventTitles = map[string]string{
	EventDrift:    "Drift",
	EventOverlap:  "Overlap",
	EventConflict: "Conflict",
	EventHandoff:  "Hand-off",
	EventPrune:    "Pruned",
	EventError:    "Error",
	EventSync:     "Synced",
}

// title is the one-line headline: "Drift: Deployment web/frontend (app
// shop)", "Resolved drift: …", or "Synced: app shop" for app-wide events.
func (m message) title() string {
	verb, ok := eventTitles[m.ev.Type]
	if !ok {
		verb = m.ev.Type
		if verb == "" {
			verb = "Event"
		}
	}
	if m.ev.Resolved {
		verb = "Resolved " + strings.ToLower(verb)
	}
	o := m.ev.Object
	if o.Kind == "" && o.Name == "" {
		return verb + ": app " + m.ev.App
	}
	name := o.Name
	if o.Namespace != "" {
		name = o.Namespace + "/" + o.Name
	}
	t := verb + ": " + strings.TrimSpace(o.Kind+" "+name)
	if m.ev.App != "" {
		t += " (app " + m.ev.App + ")"
	}
	return t
}

// summary is the event's summary, or a default saying what the state is.
func (m message) summary() string {
	if s := oneLine(m.ev.Summary); s != "" {
		return s
	}
	if m.ev.Resolved {
		return "The finding has cleared."
	}
	return ""
}

// fact is a labelled value shown in a table (Slack fields, Teams FactSet,
// Discord inline fields).
type fact struct{ name, value string }

// facts lists the event's context: app, object, revision, event and time.
func (m message) facts() []fact {
	var fs []fact
	add := func(name, value string) {
		if value != "" {
			fs = append(fs, fact{name, value})
		}
	}
	add("App", m.ev.App)
	add("Object", m.ev.Object.String())
	add("Revision", m.ev.Revision)
	add("Event", m.ev.Type+" ("+m.state()+")")
	add("Time", formatTime(m.ev.Time))
	return fs
}

// culpritText says who last wrote a field: "kubectl-edit (Update) at
// 2026-11-29T21:00:00Z", with the subresource when there is one.
func culpritText(c Culprit) string {
	if c.Manager == "" {
		return ""
	}
	var how []string
	if c.Operation != "" {
		how = append(how, c.Operation)
	}
	if c.Subresource != "" {
		how = append(how, "subresource "+c.Subresource)
	}
	s := c.Manager
	if len(how) > 0 {
		s += " (" + strings.Join(how, ", ") + ")"
	}
	if !c.Time.IsZero() {
		s += " at " + formatTime(c.Time)
	}
	return s
}

// wholeObject heads an object-level field (a deleted or unmanaged
// object's finding), which has no path.
const wholeObject = "(the whole object)"

// fieldHeading is a field's path on one line, or wholeObject for an
// object-level field: chat providers refuse or garble an empty heading
// (Discord rejects an embed field without a name).
func fieldHeading(f Field) string {
	if p := oneLine(f.Path); p != "" {
		return p
	}
	return wholeObject
}

// valueText shows a field value; an empty value is the unset field.
func valueText(v string) string {
	if v == "" {
		return "(unset)"
	}
	return v
}

func formatTime(t time.Time) string {
	if t.IsZero() {
		return ""
	}
	return t.UTC().Format(time.RFC3339)
}

// oneLine collapses runs of whitespace, newlines included, into one space.
func oneLine(s string) string {
	return strings.Join(strings.Fields(s), " ")
}

// ellipsis ends a truncated text.
const ellipsis = "…"

// utf16Len counts s the way JavaScript and Slack/Discord limits do: in
// UTF-16 code units, which is never fewer than the number of runes.
func utf16Len(s string) int {
	n := 0
	for _, r := range s {
		// Ranging over a string yields U+FFFD for invalid bytes, so
		// RuneLen is 1 or 2 here.
		n += utf16.RuneLen(r)
	}
	return n
}

// truncate shortens s to at most max UTF-16 code units, cutting at a rune
// boundary and ending with an ellipsis when something was cut.
func truncate(s string, max int) string {
	if utf16Len(s) <= max {
		return s
	}
	if max <= 0 {
		return ""
	}
	budget := max - utf16Len(ellipsis)
	n := 0
	for i, r := range s {
		w := utf16.RuneLen(r)
		if n+w > budget {
			return s[:i] + ellipsis
		}
		n += w
	}
	return s
}

// fit returns esc(s) cut to at most max UTF-16 code units without splitting
// what esc produced for one rune (an "&amp;" stays whole), ending with an
// ellipsis when something was cut. esc may be nil.
func fit(s string, max int, esc func(string) string) string {
	if max <= 0 {
		return ""
	}
	if esc == nil {
		return truncate(s, max)
	}
	// Escaping never shortens, so a text already too long raw is not
	// escaped whole.
	if utf16Len(s) <= max {
		if full := esc(s); utf16Len(full) <= max {
			return full
		}
	}
	budget := max - utf16Len(ellipsis)
	var b strings.Builder
	n := 0
	for _, r := range s {
		piece := esc(string(r))
		w := utf16Len(piece)
		if n+w > budget {
			break
		}
		b.WriteString(piece)
		n += w
	}
	return b.String() + ellipsis
}

// fitCode is fit for a value shown in a Markdown code span.
func fitCode(s string, max int, esc func(string) string) string {
	s = strings.ReplaceAll(oneLine(s), "`", "ˋ")
	return "`" + fit(s, max-2, esc) + "`"
}

// marshal encodes v as JSON without escaping <, > and & as \u003c etc.:
// payloads are not embedded in HTML, and the escapes would triple the
// size of Slack's "&lt;" and count against providers' byte limits.
func marshal(v any) ([]byte, error) {
	var b bytes.Buffer
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return nil, err
	}
	return bytes.TrimSuffix(b.Bytes(), []byte("\n")), nil
}
