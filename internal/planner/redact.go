package planner

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Redactor tells which fields' values must never be printed (an app's
// sensitive rules: config.SensitiveFields).
type Redactor interface {
	// Kind reports whether any field of objects of kind gk may be
	// sensitive.
	Kind(gk schema.GroupKind) bool
	// Matches reports whether the field at path (or an ancestor) is
	// sensitive.
	Matches(gk schema.GroupKind, path fieldpath.Path) bool
}

// Redacted is what WriteYAML and WriteJSON print instead of a sensitive
// value.
const Redacted = "<redacted>"

// Redact makes WriteYAML and WriteJSON print Redacted for every field r
// matches, on top of the Secret data they always hide.
func (p *Plan) Redact(r Redactor) { p.redactor = r }

// redactFields returns obj with the value of every field of fields that r
// matches replaced by Redacted; obj itself is not modified. A field below
// a matched path is covered by the match: the whole subtree goes.
func redactFields(obj map[string]any, fields *fieldpath.Set, gk schema.GroupKind, r Redactor) map[string]any {
	if r == nil || !r.Kind(gk) {
		return obj
	}
	var targets []fieldpath.Path
	seen := map[string]bool{}
	fields.Leaves().Iterate(func(leaf fieldpath.Path) {
		for i := 1; i <= len(leaf); i++ {
			prefix := leaf[:i]
			if !r.Matches(gk, prefix) {
				continue
			}
			if key := prefix.String(); !seen[key] {
				seen[key] = true
				targets = append(targets, prefix.Copy())
			}
			return
		}
	})
	if len(targets) == 0 {
		return obj
	}
	out := runtime.DeepCopyJSON(obj)
	for _, t := range targets {
		setAt(out, t, Redacted)
	}
	return out
}

// setAt replaces the value at path in v (decoded JSON) with to. It reports
// whether the path was found.
func setAt(v any, path fieldpath.Path, to any) bool {
	if len(path) == 0 {
		return false
	}
	pe, rest := path[0], path[1:]
	switch {
	case pe.FieldName != nil:
		m, ok := v.(map[string]any)
		if !ok {
			return false
		}
		child, ok := m[*pe.FieldName]
		if !ok {
			return false
		}
		if len(rest) == 0 {
			m[*pe.FieldName] = to
			return true
		}
		return setAt(child, rest, to)
	case pe.Key != nil, pe.Index != nil, pe.Value != nil:
		list, ok := v.([]any)
		if !ok {
			return false
		}
		for i, item := range list {
			if !itemMatches(pe, i, item) {
				continue
			}
			if len(rest) == 0 {
				list[i] = to
				return true
			}
			return setAt(item, rest, to)
		}
	}
	return false
}

// itemMatches reports whether the i-th list item is the one pe names: by
// index, by its associative-list key fields, or by value (a set).
func itemMatches(pe fieldpath.PathElement, i int, item any) bool {
	switch {
	case pe.Index != nil:
		return *pe.Index == i
	case pe.Key != nil:
		m, ok := item.(map[string]any)
		if !ok {
			return false
		}
		for _, f := range *pe.Key {
			got, ok := m[f.Name]
			if !ok || !value.Equals(value.NewValueInterface(got), f.Value) {
				return false
			}
		}
		return true
	default:
		return value.Equals(value.NewValueInterface(item), *pe.Value)
	}
}
