package ui

import (
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"

	"syncd.dev/syncd/internal/drift"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/redact"
)

// paletteSize is how many manager colours the stylesheet defines
// (.o0 … .o7); a ninth manager shares the first's colour and is told apart
// by its number.
const paletteSize = 8

// Manager is one managedFields entry in an ownership map's legend.
type Manager struct {
	// Index numbers the entry in the object's order; Colour is the
	// stylesheet class of its colour.
	Index  int
	Colour string
	Name   string
	// Operation is Apply or Update; Subresource is "" for the main
	// resource.
	Operation   string
	Subresource string
	Time        *time.Time
	// App is true for the managers the app lists in its managers
	// annotation (the fields it declares in Git).
	App bool
}

// Line is one line of an object's YAML in an ownership map.
type Line struct {
	Depth int
	// Key is the map key ("" for a list item), Item is true for a list
	// item's "-" line; Value is the scalar's YAML text ("" for a map or
	// list, whose children follow).
	Key   string
	Item  bool
	Value string
	// Path is the field in the API server's notation.
	Path string
	// Owners are the legend entries that own the field.
	Owners []*Manager
	// Declared is true when one of the app's managers owns the field by
	// Apply: Git declares it.
	Declared bool
	// Redacted is true when the value is hidden (the one redaction rule).
	Redacted bool
	// Drift is the drift finding of the field, nil when none.
	Drift *drift.Finding
}

// Shared reports whether more than one manager owns the field.
func (l Line) Shared() bool { return len(l.Owners) > 1 }

// Indent is the line's indentation, two spaces per level.
func (l Line) Indent() string { return strings.Repeat("  ", l.Depth) }

// OwnerMap is an object's ownership map: its YAML, line by line, with the
// owners of every field, and the legend of its managers.
type OwnerMap struct {
	Legend []*Manager
	Lines  []Line
	// Invalid are the managedFields entries that did not decode.
	Invalid []string
}

// mapInput is what an ownership map is built from.
type mapInput struct {
	// Object is the live object (decoded JSON), managedFields included.
	Object map[string]any
	// Own is its decoded managedFields.
	Own ownership.Ownership
	// AppManagers are the managers of the app the object is shown for.
	AppManagers []string
	// Findings are the app's drift findings for the object.
	Findings []drift.Finding
	// Rules are the redaction rules (nil: the built-in ones).
	Rules *redact.Rules
}

// buildMap builds the ownership map of an object: its managedFields are
// decoded once (package ownership), the object is redacted by the one
// rule (package redact) before any value is printed, and every line's
// owners are the entries whose field sets own its path.
func buildMap(in mapInput) *OwnerMap {
	m := &OwnerMap{}
	for i, e := range in.Own.Entries {
		m.Legend = append(m.Legend, &Manager{
			Index: i + 1, Colour: fmt.Sprintf("o%d", i%paletteSize), Name: e.Manager,
			Operation: string(e.Operation), Subresource: e.Subresource, Time: e.Time,
			App: slices.Contains(in.AppManagers, e.Manager),
		})
	}
	for _, inv := range in.Own.Invalid {
		m.Invalid = append(m.Invalid, inv.Error())
	}
	obj := withoutManagedFields(in.Object)
	sets := make([]*fieldpath.Set, 0, len(in.Own.Entries))
	union := fieldpath.NewSet()
	for _, e := range in.Own.Entries {
		sets = append(sets, e.Set)
		union = union.Union(e.Set)
	}
	shown := in.Rules.Object(obj, sets...)
	w := walker{m: m, own: in.Own, findings: findingsByPath(in.Findings)}
	w.mapLines(shown, nil, union, 0)
	return m
}

// withoutManagedFields returns obj without metadata.managedFields (the
// map shows them as colours, not as YAML); obj is not changed.
func withoutManagedFields(obj map[string]any) map[string]any {
	md, ok := obj["metadata"].(map[string]any)
	if !ok {
		return obj
	}
	out := make(map[string]any, len(obj))
	for k, v := range obj {
		out[k] = v
	}
	mdc := make(map[string]any, len(md))
	for k, v := range md {
		if k != "managedFields" {
			mdc[k] = v
		}
	}
	out["metadata"] = mdc
	return out
}

func findingsByPath(fs []drift.Finding) map[string]*drift.Finding {
	out := map[string]*drift.Finding{}
	for i := range fs {
		if fs[i].Path != "" && out[fs[i].Path] == nil {
			out[fs[i].Path] = &fs[i]
		}
	}
	return out
}

// walker turns an object into lines.
type walker struct {
	m        *OwnerMap
	own      ownership.Ownership
	findings map[string]*drift.Finding
}

// topOrder puts the fields a reader looks for first at the top, as
// kubectl prints them; the rest follow sorted.
var topOrder = []string{"apiVersion", "kind", "metadata", "spec", "data", "stringData", "status"}

func orderedKeys(obj map[string]any, top bool) []string {
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	rank := func(k string) int {
		if !top {
			return 0
		}
		if i := slices.Index(topOrder, k); i >= 0 {
			return i
		}
		return len(topOrder)
	}
	slices.SortFunc(keys, func(a, b string) int {
		if ra, rb := rank(a), rank(b); ra != rb {
			return ra - rb
		}
		return strings.Compare(a, b)
	})
	return keys
}

func (w *walker) mapLines(obj map[string]any, path fieldpath.Path, node *fieldpath.Set, depth int) {
	for _, k := range orderedKeys(obj, len(path) == 0) {
		pe := fieldpath.FieldNameElement(k)
		w.value(Line{Depth: depth, Key: k}, obj[k], append(slices.Clone(path), pe), node.WithPrefix(pe))
	}
}

func (w *walker) listLines(items []any, path fieldpath.Path, node *fieldpath.Set, depth int) {
	for i, item := range items {
		pe := itemElement(node, item, i)
		w.value(Line{Depth: depth, Item: true}, item, append(slices.Clone(path), pe), node.WithPrefix(pe))
	}
}

// value adds the line of one field and, for a map or a list, its
// children's.
func (w *walker) value(l Line, v any, path fieldpath.Path, node *fieldpath.Set) {
	l.Path = path.String()
	l.Drift = w.findings[l.Path]
	switch t := v.(type) {
	case map[string]any:
		if len(t) == 0 {
			l.Value = "{}"
		}
		w.add(l, path, len(t) == 0)
		w.mapLines(t, path, node, l.Depth+1)
	case []any:
		if len(t) == 0 {
			l.Value = "[]"
		}
		w.add(l, path, len(t) == 0)
		w.listLines(t, path, node, l.Depth+1)
	default:
		l.Value = scalarText(v)
		l.Redacted = redact.IsMarker(v)
		w.add(l, path, true)
	}
}

// add appends a line with its owners: a leaf is owned by every entry that
// owns its path (an atomic ancestor included); a map or list line only by
// the entries that own it itself, so that a parent is not painted with
// every colour of its children.
func (w *walker) add(l Line, path fieldpath.Path, leaf bool) {
	var owners []ownership.Entry
	if leaf {
		owners = w.own.Owners(path)
	} else {
		owners = w.own.OwnersOfItself(path)
	}
	for _, e := range owners {
		mgr := w.legendOf(e)
		l.Owners = append(l.Owners, mgr)
		if mgr.App && e.IsApply() {
			l.Declared = true
		}
	}
	w.m.Lines = append(w.m.Lines, l)
}

func (w *walker) legendOf(e ownership.Entry) *Manager {
	for _, m := range w.m.Legend {
		if m.Name == e.Manager && m.Operation == string(e.Operation) && m.Subresource == e.Subresource {
			return m
		}
	}
	return &Manager{Name: e.Manager, Colour: "o0"}
}

// itemElement is the path element of the i-th item of a list, as the
// managers' field sets name it: the key or value element one of them
// holds for the item, else its index.
func itemElement(node *fieldpath.Set, item any, i int) fieldpath.PathElement {
	var found *fieldpath.PathElement
	try := func(pe fieldpath.PathElement) {
		if found == nil && elementMatches(pe, item, i) {
			c := pe
			found = &c
		}
	}
	node.Members.Iterate(try)
	node.Children.Iterate(try)
	if found != nil {
		return *found
	}
	return fieldpath.IndexElement(i)
}

// elementMatches reports whether pe names item, the i-th of its list.
func elementMatches(pe fieldpath.PathElement, item any, i int) bool {
	switch {
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			v, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(v), f.Value) {
				return false
			}
		}
		return true
	case pe.Value != nil:
		return value.Equals(value.NewValueInterface(item), *pe.Value)
	case pe.Index != nil:
		return *pe.Index == i
	}
	return false
}

// scalarText is a scalar's YAML-like text: strings quoted when YAML would
// read them as something else, everything else as JSON.
func scalarText(v any) string {
	if s, ok := v.(string); ok && (plainString(s) || redact.IsMarker(s)) {
		return s
	}
	var b strings.Builder
	enc := json.NewEncoder(&b)
	// The page's template escapes for HTML; JSON's own escaping would
	// show as \u003c.
	enc.SetEscapeHTML(false)
	if err := enc.Encode(v); err != nil {
		return fmt.Sprint(v)
	}
	return strings.TrimSuffix(b.String(), "\n")
}

// plainString reports whether s reads back as the same string unquoted
// in YAML: no indicator at its start, no ": " or " #" inside, not a
// word YAML reads as a boolean or null, not a number.
func plainString(s string) bool {
	if s == "" || strings.TrimSpace(s) != s || strings.ContainsAny(s, "\n\t") ||
		strings.ContainsAny(s[:1], "-?:,[]{}#&*!|>'\"%@`") ||
		strings.Contains(s, ": ") || strings.Contains(s, " #") || strings.HasSuffix(s, ":") {
		return false
	}
	switch strings.ToLower(s) {
	case "true", "false", "null", "yes", "no", "on", "off", "~":
		return false
	}
	var n json.Number
	return json.Unmarshal([]byte(s), &n) != nil
}
