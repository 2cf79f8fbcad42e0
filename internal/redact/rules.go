package redact

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"syncd.dev/syncd/internal/paths"
)

// Marker is printed instead of every value this package hides.
const Marker = "<redacted>"

// ChangedMarker is printed on the new side of a diff instead of a hidden
// value that changes.
const ChangedMarker = "<redacted, changed>"

// LastApplied is the annotation client-side kubectl apply writes: a copy of
// the whole object, values included.
const LastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// IsSecret reports whether objects of gk are core Secrets, whatever their
// version.
func IsSecret(gk schema.GroupKind) bool { return gk.Group == "" && gk.Kind == "Secret" }

// IsMarker reports whether v is one of the markers.
func IsMarker(v any) bool { return v == Marker || v == ChangedMarker }

// Rules are the redaction rules for one app: the built-in ones (Secret data
// and stringData, the last-applied annotation) and the app's sensitive
// rules. A nil *Rules holds the built-in rules only.
type Rules struct {
	rules []rule
	// secrets are masked inside every string (WithSecrets).
	secrets *Secrets
}

type rule struct {
	kinds map[schema.GroupKind]bool // nil: any kind
	paths []paths.Pattern
	exact []fieldpath.Path // fields named one by one (WithFields)
}

// Field is one field of the objects of a kind whose value is hidden: where
// a value syncd decrypted landed in a rendered object.
type Field struct {
	Kind schema.GroupKind
	Path fieldpath.Path
}

// WithFields returns r with every field of fields (and everything below
// it) hidden too, in objects of the field's kind. r is not changed;
// without fields r itself is returned.
func (r *Rules) WithFields(fields []Field) *Rules {
	if len(fields) == 0 {
		return r
	}
	out := &Rules{}
	if r != nil {
		out.rules = slices.Clone(r.rules)
		out.secrets = r.secrets
	}
	at := map[schema.GroupKind]int{}
	for _, f := range fields {
		i, ok := at[f.Kind]
		if !ok {
			i = len(out.rules)
			at[f.Kind] = i
			out.rules = append(out.rules, rule{kinds: map[schema.GroupKind]bool{f.Kind: true}})
		}
		out.rules[i].exact = append(out.rules[i].exact, f.Path)
	}
	return out
}

// Sensitive is one of an app's sensitive rules: the values at Paths of
// objects of Kinds are never printed.
type Sensitive struct {
	// Kinds limits the rule to these kinds; empty: every kind.
	Kinds []schema.GroupKind
	// Paths are the hidden fields (and everything below them).
	Paths []paths.Pattern
}

// Options are an app's redaction settings.
type Options struct {
	// Sensitive are the app's rules, on top of the built-in ones.
	Sensitive []Sensitive
}

// ParseSensitive reads a sensitive rule from its written form: kinds as
// "Kind" or "group/Kind", paths in field-path notation. Errors name the
// field (paths, paths[1]) and say what to write.
func ParseSensitive(kinds, pathList []string) (Sensitive, error) {
	var r Sensitive
	for _, k := range kinds {
		r.Kinds = append(r.Kinds, groupKindOf(k))
	}
	if len(pathList) == 0 {
		return Sensitive{}, fmt.Errorf("paths: paths is required; list the fields whose values must never be printed, e.g. .data.password")
	}
	pats, err := paths.ParseAll(pathList)
	if err != nil {
		return Sensitive{}, err
	}
	r.Paths = pats
	return r, nil
}

// New returns the rules of an app: the built-in ones and opts.Sensitive.
// It returns nil (the built-in rules) when the app has none.
func New(opts Options) *Rules {
	if len(opts.Sensitive) == 0 {
		return nil
	}
	out := &Rules{}
	for _, sr := range opts.Sensitive {
		r := rule{paths: sr.Paths}
		for _, gk := range sr.Kinds {
			if r.kinds == nil {
				r.kinds = map[schema.GroupKind]bool{}
			}
			r.kinds[gk] = true
		}
		out.rules = append(out.rules, r)
	}
	return out
}

// groupKindOf reads a config kind: "group/Kind", or "Kind" for the core
// group.
func groupKindOf(k string) schema.GroupKind {
	if group, kind, ok := strings.Cut(k, "/"); ok {
		return schema.GroupKind{Group: group, Kind: kind}
	}
	return schema.GroupKind{Kind: k}
}

// Path reports whether the value at path of an object of kind gk is
// hidden: the path, or one of its ancestors, is sensitive.
func (r *Rules) Path(gk schema.GroupKind, path fieldpath.Path) bool {
	return builtinPath(gk, path) || r.appPath(gk, path)
}

// builtinPath is the rule that holds for every app: Secret data and
// stringData, and the last-applied annotation of any object.
func builtinPath(gk schema.GroupKind, path fieldpath.Path) bool {
	if len(path) == 0 || path[0].FieldName == nil {
		return false
	}
	top := *path[0].FieldName
	if IsSecret(gk) && (top == "data" || top == "stringData") {
		return true
	}
	return len(path) >= 3 && top == "metadata" &&
		path[1].FieldName != nil && *path[1].FieldName == "annotations" &&
		path[2].FieldName != nil && *path[2].FieldName == LastApplied
}

// appPath reports whether an app rule for gk matches path or an ancestor.
func (r *Rules) appPath(gk schema.GroupKind, path fieldpath.Path) bool {
	if r == nil {
		return false
	}
	for _, ru := range r.rules {
		if ru.kinds != nil && !ru.kinds[gk] {
			continue
		}
		for _, p := range ru.paths {
			if p.Matches(path) {
				return true
			}
		}
		for _, e := range ru.exact {
			if len(path) >= len(e) && path[:len(e)].Equals(e) {
				return true
			}
		}
	}
	return false
}
