package redact

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
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
}

type rule struct {
	kinds map[schema.GroupKind]bool // nil: any kind
	paths []paths.Pattern
}

// ForApp compiles the app's sensitive rules on top of the built-in ones. It
// returns nil (the built-in rules) when the app has none. Errors name the
// app, the rule and the field.
func ForApp(a config.App) (*Rules, error) {
	if len(a.Sensitive) == 0 {
		return nil, nil
	}
	out := &Rules{}
	for i, sr := range a.Sensitive {
		where := fmt.Sprintf("app %q: sensitive[%d]", a.Name, i)
		r, err := compile(sr)
		if err != nil {
			return nil, fmt.Errorf("%s.%w", where, err)
		}
		out.rules = append(out.rules, r)
	}
	return out, nil
}

func compile(sr config.SensitiveRule) (rule, error) {
	var r rule
	for _, k := range sr.Kinds {
		if r.kinds == nil {
			r.kinds = map[schema.GroupKind]bool{}
		}
		r.kinds[groupKindOf(k)] = true
	}
	if len(sr.Paths) == 0 {
		return rule{}, fmt.Errorf("paths: paths is required; list the fields whose values must never be printed, e.g. .data.password")
	}
	for j, s := range sr.Paths {
		p, err := paths.Parse(s)
		if err != nil {
			return rule{}, fmt.Errorf("paths[%d]: %w", j, err)
		}
		r.paths = append(r.paths, p)
	}
	return r, nil
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
	}
	return false
}
