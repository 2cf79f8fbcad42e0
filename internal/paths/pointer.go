package paths

import (
	"strconv"
	"strings"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
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
			i := ItemIndex(l, pe)
			if i < 0 {
				return "", false
			}
			v = l[i]
			b.WriteString("/" + strconv.Itoa(i))
		}
	}
	return b.String(), true
}
