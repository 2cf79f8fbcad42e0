package paths

import "sigs.k8s.io/structured-merge-diff/v6/fieldpath"

// Set replaces the value at path in v (maps and lists as decoded from
// JSON, changed in place) with x, finding list items as Lookup does, and
// reports whether it did: Set never creates a field or an item, so a path
// v does not hold is left as it is (false).
func Set(v any, path fieldpath.Path, x any) bool {
	if len(path) == 0 {
		return false
	}
	parent, ok := Lookup(v, path[:len(path)-1])
	if !ok {
		return false
	}
	last := path[len(path)-1]
	if last.FieldName != nil {
		m, ok := parent.(map[string]any)
		if !ok {
			return false
		}
		if _, ok := m[*last.FieldName]; !ok {
			return false
		}
		m[*last.FieldName] = x
		return true
	}
	l, ok := parent.([]any)
	if !ok {
		return false
	}
	i := ItemIndex(l, last)
	if i < 0 {
		return false
	}
	l[i] = x
	return true
}
