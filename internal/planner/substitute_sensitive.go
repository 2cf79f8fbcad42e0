package planner

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// checkSensitive refuses an object in which a sensitive value lands where
// syncd would print it. The walker recorded every string a sensitive
// variable reached (its value, or text derived from it: ${S:0:1},
// ${#S}); each must be a field the app's redaction rules hide, and none
// may be part of the object's identity or a map key, which are printed
// whatever the rules say.
func (s *Substitution) checkSensitive(obj *unstructured.Unstructured, w *walker) error {
	gk := obj.GroupVersionKind().GroupKind()
	var printed, names []string
	for _, r := range w.sensitive {
		switch {
		case isIdentityPath(r.path):
			printed = append(printed, r.String()+" (the object's identity)")
		case r.keys:
			printed = append(printed, r.String()+" (its keys)")
		case !s.Sensitive.Path(gk, r.path):
			printed = append(printed, r.String())
		default:
			continue
		}
		names = append(names, r.names)
	}
	if len(printed) == 0 {
		return nil
	}
	slices.Sort(printed)
	slices.Sort(names)
	return fmt.Errorf("the sensitive variables %s land in %s, which syncd prints: substitute them only into a Secret's data or stringData, or into fields an apps[].sensitive rule for this kind covers (paths with [*] for list items)", strings.Join(slices.Compact(names), ", "), strings.Join(slices.Compact(printed), ", "))
}

// reach is a string a sensitive variable reached: a field's value, or
// (with keys) a key of the map at path.
type reach struct {
	path fieldpath.Path
	keys bool
	// names names the variables of the string (lookup.names).
	names string
}

func (r reach) String() string { return pathString(r.path) }

// isIdentityPath reports whether p is or holds apiVersion, kind, or
// metadata.name, namespace or generateName: printed in every report.
func isIdentityPath(p fieldpath.Path) bool {
	if len(p) == 0 {
		return true
	}
	top := p[0].FieldName
	if top == nil {
		return false
	}
	switch *top {
	case "apiVersion", "kind":
		return true
	case "metadata":
		if len(p) == 1 {
			return true
		}
		f := p[1].FieldName
		return f != nil && (*f == "name" || *f == "namespace" || *f == "generateName")
	}
	return false
}
