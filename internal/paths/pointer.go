package paths

import (
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Pointer returns the JSON pointer (RFC 6901, as JSON patches use) of the
// value at path in an unstructured object, with keyed list items and set
// items resolved to their index in v; false when v has no value there.
func Pointer(v any, path fieldpath.Path) (string, bool) {
	var b strings.Builder
	for _, pe := range path {
		switch {
		case pe.FieldName != nil:
			m, ok := v.(map[string]any)
			if !ok {
				return "", false
			}
			if v, ok = m[*pe.FieldName]; !ok {
				return "", false
			}
			b.WriteString("/" + strings.NewReplacer("~", "~0", "/", "~1").Replace(*pe.FieldName))
		default:
			l, ok := v.([]any)
			if !ok {
				return "", false
			}
			i := itemIndex(l, pe)
			if i < 0 {
				return "", false
			}
			v = l[i]
			b.WriteString("/" + strconv.Itoa(i))
		}
	}
	return b.String(), true
}

// itemIndex returns the index of the list item pe names, or -1.
func itemIndex(l []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index < len(l) {
			return *pe.Index
		}
	case pe.Value != nil:
		for i, item := range l {
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return i
			}
		}
	case pe.Key != nil:
		for i, item := range l {
			m, ok := item.(map[string]any)
			if !ok {
				continue
			}
			all := true
			for _, f := range *pe.Key {
				if !value.Equals(value.NewValueInterface(m[f.Name]), f.Value) {
					all = false
					break
				}
			}
			if all {
				return i
			}
		}
	}
	return -1
}
