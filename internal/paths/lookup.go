package paths

import (
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Lookup returns the value at path in an unstructured object (maps, lists
// and scalars as decoded from JSON), following keyed list items, set items
// and indexes the way the API server names them.
func Lookup(v any, path fieldpath.Path) (any, bool) {
	for _, pe := range path {
		switch {
		case pe.FieldName != nil:
			m, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = m[*pe.FieldName]; !ok {
				return nil, false
			}
		case pe.Index != nil:
			l, ok := v.([]any)
			if !ok || *pe.Index >= len(l) {
				return nil, false
			}
			v = l[*pe.Index]
		case pe.Value != nil:
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, item := range l {
				if value.Equals(value.NewValueInterface(item), *pe.Value) {
					v, found = item, true
					break
				}
			}
			if !found {
				return nil, false
			}
		case pe.Key != nil:
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			found := false
			for _, item := range l {
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
					v, found = item, true
					break
				}
			}
			if !found {
				return nil, false
			}
		default:
			return nil, false
		}
	}
	return v, true
}
