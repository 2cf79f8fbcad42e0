package drift

import (
	"encoding/json"
	"fmt"
	"io"
	"sort"
	"strings"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/redact"
)

// Report is the result of one drift detection.
type Report struct {
	// Findings are sorted by object, path, class and culprit.
	Findings []Finding `json:"findings"`
	// Ignored are the findings the app's ignore rules set aside
	// (Options.Ignore), marked Ignored, sorted like Findings: no drift,
	// never alerted or corrected; `syncd drift --show-ignored` lists
	// them. Outputs show them only when the caller keeps them.
	Ignored []Finding `json:"ignored,omitempty"`
	// Warnings are problems that kept part of an object from being
	// checked (an undecodable managedFields entry). They name the
	// object and say what was skipped.
	Warnings []string `json:"warnings,omitempty"`
}

// HasDrift reports whether the report holds a finding that is drift;
// Yielded, HandoffPending and Overlap findings are information and do not
// count.
func (r *Report) HasDrift() bool {
	for _, f := range r.Findings {
		if f.Class.IsDrift() {
			return true
		}
	}
	return false
}

// ObjectOverlap is one object that this app and another syncd app both
// declare with the same values: the Overlap findings of one object and
// other app, counted.
type ObjectOverlap struct {
	App      string `json:"app"`
	Object   Object `json:"object"`
	OtherApp string `json:"otherApp"`
	// Fields is how many declared fields the two apps share.
	Fields int `json:"fields"`
}

// Sentence says what the overlap is, without "overlap: ".
func (o ObjectOverlap) Sentence() string {
	return fmt.Sprintf("%s is also declared by app %s (%d field%s, same values)", o.Object, o.OtherApp, o.Fields, plural(o.Fields))
}

func plural(n int) string {
	if n == 1 {
		return ""
	}
	return "s"
}

// Overlaps returns the report's Overlap findings once per object and
// other app, in report order.
func (r *Report) Overlaps() []ObjectOverlap {
	return OverlapsOf(r.Findings)
}

// OverlapsOf groups the Overlap findings of findings per app, object and
// other app, in the order of their first finding.
func OverlapsOf(findings []Finding) []ObjectOverlap {
	type key struct {
		app   string
		obj   Object
		other string
	}
	var out []ObjectOverlap
	at := map[key]int{}
	for _, f := range findings {
		if f.Class != Overlap {
			continue
		}
		k := key{f.App, f.Key().Object, f.OtherApp}
		i, ok := at[k]
		if !ok {
			i = len(out)
			at[k] = i
			out = append(out, ObjectOverlap{App: f.App, Object: f.Object, OtherApp: f.OtherApp})
		}
		out[i].Fields++
	}
	return out
}

// driftFindings returns the findings that are not overlaps (each overlap
// is written once per object and app in the text outputs).
func (r *Report) driftFindings() []Finding {
	var out []Finding
	for _, f := range r.Findings {
		if f.Class != Overlap {
			out = append(out, f)
		}
	}
	return out
}

func (r *Report) sort() {
	sort.SliceStable(r.Findings, func(i, j int) bool { return less(r.Findings[i], r.Findings[j]) })
	sort.SliceStable(r.Ignored, func(i, j int) bool { return less(r.Ignored[i], r.Ignored[j]) })
}

func less(a, b Finding) bool {
	if a.App != b.App {
		return a.App < b.App
	}
	if a.Ref != b.Ref {
		if a.Ref.Less(b.Ref) || b.Ref.Less(a.Ref) {
			return a.Ref.Less(b.Ref)
		}
	}
	if a.Path != b.Path {
		return a.Path < b.Path
	}
	if a.Class != b.Class {
		return a.Class.rank() < b.Class.rank()
	}
	return a.Culprit < b.Culprit
}

// WriteJSON writes the report as
// {"findings":[{"app","object":{...},"path","class","declaredBy","desired","live","owners":[...]}]},
// indented, with findings an empty list (never null) when there are none.
func (r *Report) WriteJSON(w io.Writer) error {
	out := *r
	if out.Findings == nil {
		out.Findings = []Finding{}
	}
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	enc.SetEscapeHTML(false)
	return enc.Encode(out)
}

// WriteText writes one line per finding, grouped by nothing, in report
// order ("no drift" when there are none), except overlaps: one
// "overlap: <object> is also declared by app <b> (N fields, same values)"
// line per object and other app.
func (r *Report) WriteText(w io.Writer) error {
	var b strings.Builder
	findings := r.driftFindings()
	if len(findings) == 0 {
		b.WriteString("no drift\n")
	}
	for _, f := range findings {
		b.WriteString(f.Object.String())
		b.WriteString(": ")
		b.WriteString(f.Sentence())
		b.WriteByte('\n')
	}
	for _, o := range r.Overlaps() {
		b.WriteString("overlap: " + o.Sentence() + "\n")
	}
	for _, f := range r.Ignored {
		b.WriteString("ignored: ")
		b.WriteString(f.Object.String())
		b.WriteString(": ")
		b.WriteString(f.Sentence())
		b.WriteString(" (an ignore rule of the app matches it: not drift, not corrected)\n")
	}
	for _, wn := range r.Warnings {
		b.WriteString("warning: " + wn + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteMarkdown writes the findings as a Markdown table (object, field,
// class, Git, live, owners), or "No drift." when there are none; then the
// Ignored findings, if any (--show-ignored), in a second table.
func (r *Report) WriteMarkdown(w io.Writer) error {
	var b strings.Builder
	if findings := r.driftFindings(); len(findings) == 0 {
		b.WriteString("No drift.\n")
	} else {
		writeMarkdownTable(&b, findings)
	}
	for _, o := range r.Overlaps() {
		b.WriteString("\n> overlap: " + mdCell(o.Sentence()) + "\n")
	}
	if len(r.Ignored) > 0 {
		b.WriteString("\nIgnored (an ignore rule of the app matches them: not drift, not corrected):\n\n")
		writeMarkdownTable(&b, r.Ignored)
	}
	for _, wn := range r.Warnings {
		b.WriteString("\n> warning: " + mdCell(wn) + "\n")
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// writeMarkdownTable writes findings as the table WriteMarkdown
// describes.
func writeMarkdownTable(b *strings.Builder, findings []Finding) {
	b.WriteString("| Object | Field | Class | Git | Live | Owners |\n")
	b.WriteString("|---|---|---|---|---|---|\n")
	for _, f := range findings {
		path := "(object)"
		if f.Path != "" {
			path = code(f.Path)
		}
		cells := []string{
			code(f.Object.String()), path, string(f.Class),
			mdValue(f, f.Desired), mdValue(f, f.Live), mdCell(ownersText(f.Owners)),
		}
		b.WriteString("| " + strings.Join(cells, " | ") + " |\n")
	}
}

func mdValue(f Finding, v any) string {
	if f.Redacted && v != nil {
		return redact.Marker
	}
	if v == nil {
		return "—"
	}
	return code(valueText(v))
}

// code renders s as inline code, escaping pipes for tables.
func code(s string) string {
	s = strings.ReplaceAll(s, "|", `\|`)
	fence := "`"
	if strings.Contains(s, "`") {
		fence = "``"
		s = " " + s + " "
	}
	return fence + s + fence
}

func mdCell(s string) string {
	return strings.ReplaceAll(strings.ReplaceAll(s, "|", `\|`), "\n", " ")
}

// maxValueLen bounds the values printed in text and Markdown.
const maxValueLen = 80

// valueText prints a value: strings as they are, anything else as compact
// JSON, cut at maxValueLen characters.
func valueText(v any) string {
	var s string
	switch x := v.(type) {
	case nil:
		s = "(unset)"
	case string:
		s = x
	default:
		b, err := json.Marshal(x)
		if err != nil {
			s = fmt.Sprint(x)
		} else {
			s = string(b)
		}
	}
	s = strings.ReplaceAll(s, "\n", `\n`)
	if r := []rune(s); len(r) > maxValueLen {
		s = string(r[:maxValueLen-1]) + "…"
	}
	return s
}

// shownValue prints one of f's values for a sentence: redact.Marker when
// f is redacted, whatever value it holds.
func (f Finding) shownValue(v any) string {
	if f.Redacted && v != nil {
		return redact.Marker
	}
	return valueText(v)
}

// ownerText prints "kubectl-edit (Update, subresource scale) at 2026-11-29 14:02:05 UTC".
func ownerText(o Owner) string {
	how := o.Operation
	if o.Subresource != "" {
		how += ", subresource " + o.Subresource
	}
	s := o.Manager
	if how != "" {
		s += " (" + how + ")"
	}
	if o.Time != nil {
		s += " at " + o.Time.UTC().Format("2006-01-02 15:04:05 UTC")
	}
	return s
}

func ownersText(os []Owner) string {
	parts := make([]string, len(os))
	for i, o := range os {
		parts[i] = ownerText(o)
	}
	return strings.Join(parts, "; ")
}

// Sentence describes the finding in one line, without the object. A
// redacted finding's values read redact.Marker, as in every other output.
func (f Finding) Sentence() string {
	desired, live := f.shownValue(f.Desired), f.shownValue(f.Live)
	var culprits []string
	for _, o := range f.Owners {
		if o.Manager != f.DeclaredBy {
			culprits = append(culprits, ownerText(o))
		}
	}
	by := strings.Join(culprits, " and ")
	switch f.Class {
	case Deleted:
		return "does not exist: deleted out of band, or never applied; Git declares it"
	case Unmanaged:
		if len(f.Owners) == 0 {
			return "is no longer managed by syncd: no manager owns any field"
		}
		return "is no longer managed by syncd: its fields belong to " + ownersText(f.Owners)
	case TakenOver:
		if len(f.Owners) == 0 && f.Live == nil {
			return f.Path + " was removed out of band; Git says " + desired
		}
		if len(f.Owners) == 0 {
			return f.Path + " is owned by no manager (managedFields were edited, or the schema differs); it is " + live + ", Git says " + desired
		}
		if !f.Differs {
			return f.Path + " was taken over by " + by + " with the value Git declares (" + desired + ")"
		}
		return f.Path + " was changed from " + desired + " to " + live + " by " + by + "; Git says " + desired
	case Shared:
		return f.Path + " is shared by " + f.DeclaredBy + " with " + by + "; neither can change or drop it alone"
	case ValueDrift:
		return f.Path + " is " + live + " although only " + f.DeclaredBy + " owns it (a write under that name or a mutating webhook changed it); Git says " + desired
	case Flapping:
		return f.Path + " is flapping: its owner keeps flipping between " + f.DeclaredBy + " and " + orUnknown(f.Culprit) + "; both sides force it"
	case Yielded:
		return f.Path + " was yielded to " + orUnknown(f.Culprit) + " (information)"
	case HandoffPending:
		return f.Path + " left Git and is held by " + ownership.HandoffManager(f.DeclaredBy) + " until another writer takes it (information)"
	case Overlap:
		return f.Path + " is also declared by app " + f.OtherApp + " (" + orUnknown(f.Culprit) + ") with the same value (information)"
	}
	return f.Path + ": " + string(f.Class)
}

func orUnknown(s string) string {
	if s == "" {
		return "another manager"
	}
	return s
}
