package paths

import (
	"encoding/base64"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// LookupOptions change how LookupWith finds keyed list items.
type LookupOptions struct {
	// OmittedKeyFields also matches, when no item of an associative list
	// has the whole key, the first item whose key fields match except for
	// those it omits: the schema defaults them (a port's protocol), so a
	// declared object may leave out what the live one holds.
	OmittedKeyFields bool
}

// Lookup returns the value at path in an unstructured object (maps, lists
// and scalars as decoded from JSON), following keyed list items, set items
// and indexes the way the API server names them. A keyed item matches
// only with its whole key; an index outside the list (negative, or past
// its end) finds nothing.
func Lookup(v any, path fieldpath.Path) (any, bool) {
	return LookupWith(v, path, LookupOptions{})
}

// LookupWith is Lookup with options.
func LookupWith(v any, path fieldpath.Path, o LookupOptions) (any, bool) {
	for _, pe := range path {
		var ok bool
		if v, ok = step(v, pe, o); !ok {
			return nil, false
		}
	}
	return v, true
}

// LookupStored is LookupWith on an object as the API server returns it,
// except that a Secret's .stringData.K (secret set), which the server
// never returns (it stores the value in .data.K, base64-encoded), is read
// from .data.K, decoded: what a manager that applied .stringData.K
// declared is found where the server keeps it. A .data.K that is not
// base64 is returned as it is.
func LookupStored(obj map[string]any, path fieldpath.Path, secret bool, o LookupOptions) (any, bool) {
	if !secret || !isStringData(path) {
		return LookupWith(obj, path, o)
	}
	v, ok := LookupWith(obj, fieldpath.MakePathOrDie("data", *path[1].FieldName), o)
	s, isString := v.(string)
	if !ok || !isString {
		return nil, false
	}
	b, err := base64.StdEncoding.DecodeString(s)
	if err != nil {
		return s, true
	}
	return string(b), true
}

// isStringData reports whether path is a key of a Secret's write-only
// .stringData.
func isStringData(path fieldpath.Path) bool {
	return len(path) == 2 && path[0].FieldName != nil && *path[0].FieldName == "stringData" && path[1].FieldName != nil
}

// step returns the value pe names inside v.
func step(v any, pe fieldpath.PathElement, o LookupOptions) (any, bool) {
	if pe.FieldName != nil {
		m, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		v, ok = m[*pe.FieldName]
		return v, ok
	}
	l, ok := v.([]any)
	if !ok {
		return nil, false
	}
	if i := itemIndex(l, pe, o); i >= 0 {
		return l[i], true
	}
	return nil, false
}

// ItemIndex returns the index of the item of l that pe names (an index, a
// set value or a whole key, as the API server names list items), or -1
// when there is none: a negative index or one past the end finds nothing.
// It is the one rule Lookup and every other walker over field paths use.
func ItemIndex(l []any, pe fieldpath.PathElement) int {
	return itemIndex(l, pe, LookupOptions{})
}

func itemIndex(l []any, pe fieldpath.PathElement, o LookupOptions) int {
	switch {
	case pe.Index != nil:
		if *pe.Index < 0 || *pe.Index >= len(l) {
			return -1
		}
		return *pe.Index
	case pe.Value != nil:
		for i, item := range l {
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return i
			}
		}
	case pe.Key != nil:
		return keyedIndex(l, *pe.Key, o.OmittedKeyFields)
	}
	return -1
}

// keyedIndex finds the item of an associative list with the given key;
// with omitted, in a second pass, one that omits key fields.
func keyedIndex(l []any, key value.FieldList, omitted bool) int {
	passes := []bool{false}
	if omitted {
		passes = append(passes, true)
	}
	for _, skipOmitted := range passes {
		for i, item := range l {
			m, ok := item.(map[string]any)
			if ok && hasKey(m, key, skipOmitted) {
				return i
			}
		}
	}
	return -1
}

// hasKey reports whether item holds every field of key with its value;
// with skipOmitted, fields item does not hold are not compared.
func hasKey(item map[string]any, key value.FieldList, skipOmitted bool) bool {
	for _, f := range key {
		v, ok := item[f.Name]
		if !ok && skipOmitted {
			continue
		}
		if !value.Equals(value.NewValueInterface(v), f.Value) {
			return false
		}
	}
	return true
}
