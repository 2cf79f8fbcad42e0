package ignore

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// Rule is one ignore rule; an empty list matches anything, except Paths,
// which must name at least one field.
type Rule struct {
	Kinds []schema.GroupKind
	// Names and Namespaces are path.Match globs on the object's name and
	// namespace ("" for cluster-scoped objects).
	Names      []string
	Namespaces []string
	Paths      []paths.Pattern
	// Managers are path.Match globs on the managers, other than the
	// app's, that own the field; set, the rule matches only a field such
	// a manager owns (never a webhook's mutation, which leaves none).
	Managers []string
}

// Rules are an app's ignore rules. The nil *Rules ignores nothing.
type Rules struct {
	rules []Rule
}

// New checks the rules and returns them; an error names the rule (by
// index) and what is wrong with it.
func New(rules []Rule) (*Rules, error) {
	for i, r := range rules {
		if len(r.Paths) == 0 {
			return nil, fmt.Errorf("[%d].paths: at least one field path is required; an ignore rule never ignores whole objects", i)
		}
		for field, globs := range map[string][]string{"names": r.Names, "namespaces": r.Namespaces, "managers": r.Managers} {
			for j, g := range globs {
				if _, err := path.Match(g, ""); err != nil {
					return nil, fmt.Errorf("[%d].%s[%d]: %q is not a glob: %w", i, field, j, g, err)
				}
			}
		}
	}
	if len(rules) == 0 {
		return nil, nil
	}
	return &Rules{rules: rules}, nil
}

// Ignores reports whether a rule ignores the field at p of the object
// ref; others are the managers, other than the app's own, that own the
// field now.
func (rs *Rules) Ignores(ref planner.ObjectRef, p fieldpath.Path, others []string) bool {
	if rs == nil {
		return false
	}
	for i := range rs.rules {
		if rs.rules[i].matches(ref, p, others) {
			return true
		}
	}
	return false
}

// Below reports whether a rule of the object ref may ignore a field at or
// below p (whatever its owners): the plan marks such diff lines.
func (rs *Rules) Below(ref planner.ObjectRef, p fieldpath.Path) bool {
	if rs == nil {
		return false
	}
	for i := range rs.rules {
		r := &rs.rules[i]
		if !r.object(ref) {
			continue
		}
		for _, pat := range r.Paths {
			if pat.Matches(p) || pat.Below(p) {
				return true
			}
		}
	}
	return false
}

// matches reports whether r matches the field.
func (r *Rule) matches(ref planner.ObjectRef, p fieldpath.Path, others []string) bool {
	if !r.object(ref) || !r.field(p) {
		return false
	}
	if len(r.Managers) == 0 {
		return true
	}
	for _, m := range others {
		if MatchesAny(r.Managers, m) {
			return true
		}
	}
	return false
}

// object reports whether r's kinds, names and namespaces match ref.
func (r *Rule) object(ref planner.ObjectRef) bool {
	if len(r.Kinds) > 0 {
		ok := false
		for _, gk := range r.Kinds {
			ok = ok || gk == ref.GroupKind()
		}
		if !ok {
			return false
		}
	}
	return (len(r.Names) == 0 || MatchesAny(r.Names, ref.Name)) &&
		(len(r.Namespaces) == 0 || MatchesAny(r.Namespaces, ref.Namespace))
}

// field reports whether one of r's paths matches p.
func (r *Rule) field(p fieldpath.Path) bool {
	for _, pat := range r.Paths {
		if pat.Matches(p) {
			return true
		}
	}
	return false
}

// MatchesAny reports whether s matches one of globs (path.Match patterns;
// a malformed pattern matches nothing). Ignore rules, conflict policy
// rules and manager migrations match names and managers with it.
func MatchesAny(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}
