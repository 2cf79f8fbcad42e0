package config

import (
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/paths"
)

// SensitiveFields is the compiled form of an app's sensitive rules: it
// tells whether a field of an object of some kind must have its value
// redacted. A nil *SensitiveFields marks nothing.
type SensitiveFields struct {
	rules []sensitiveRule
}

type sensitiveRule struct {
	kinds map[schema.GroupKind]bool // nil: any
	paths []paths.Pattern
}

// SensitiveFields compiles the app's sensitive rules; it returns nil when
// the app has none. Errors name the rule and field.
func (a App) SensitiveFields() (*SensitiveFields, error) {
	if len(a.Sensitive) == 0 {
		return nil, nil
	}
	out := &SensitiveFields{}
	for i, r := range a.Sensitive {
		where := fmt.Sprintf("app %q: sensitive[%d]", a.Name, i)
		var sr sensitiveRule
		for j, k := range r.Kinds {
			if prob := kindProblem(k); prob != "" {
				return nil, fmt.Errorf("%s.kinds[%d]: %s", where, j, prob)
			}
			if sr.kinds == nil {
				sr.kinds = map[schema.GroupKind]bool{}
			}
			sr.kinds[groupKindOf(k)] = true
		}
		if len(r.Paths) == 0 {
			return nil, fmt.Errorf("%s.paths: paths is required; list the fields whose values must never be printed, e.g. .data.password", where)
		}
		for j, s := range r.Paths {
			pat, err := paths.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("%s.paths[%d]: %w", where, j, err)
			}
			sr.paths = append(sr.paths, pat)
		}
		out.rules = append(out.rules, sr)
	}
	return out, nil
}

// groupKindOf reads "group/Kind" or "Kind" (core group).
func groupKindOf(k string) schema.GroupKind {
	if group, kind, ok := strings.Cut(k, "/"); ok {
		return schema.GroupKind{Group: group, Kind: kind}
	}
	return schema.GroupKind{Kind: k}
}

// Matches reports whether the field at path of an object of kind gk is
// sensitive: a rule for the kind has a pattern that matches path or one
// of its ancestors.
func (s *SensitiveFields) Matches(gk schema.GroupKind, path fieldpath.Path) bool {
	if s == nil {
		return false
	}
	for _, r := range s.rules {
		if r.kinds != nil && !r.kinds[gk] {
			continue
		}
		for _, p := range r.paths {
			if p.Matches(path) {
				return true
			}
		}
	}
	return false
}

// Kind reports whether some rule applies to objects of kind gk, so callers
// can skip objects no rule names.
func (s *SensitiveFields) Kind(gk schema.GroupKind) bool {
	if s == nil {
		return false
	}
	for _, r := range s.rules {
		if r.kinds == nil || r.kinds[gk] {
			return true
		}
	}
	return false
}
