package applier

import (
	"fmt"
	"path"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// Policy decides, per conflicting field, whether an apply fails, forces or
// yields. It is built from an app's conflicts section: the first rule that
// matches the object's kind and name, the field and the other manager wins;
// otherwise the default applies.
type Policy struct {
	def   config.Action
	rules []policyRule
}

type policyRule struct {
	index    int
	kinds    map[schema.GroupKind]bool // nil: any
	names    []string                  // globs; nil: any
	paths    []paths.Pattern           // nil: any
	managers []string                  // globs; nil: any
	action   config.Action
}

// NewPolicy compiles a conflict policy. Errors name the rule and field.
func NewPolicy(p config.ConflictPolicy) (*Policy, error) {
	out := &Policy{def: p.DefaultAction()}
	if !validAction(out.def) {
		return nil, fmt.Errorf("conflicts.default: %q is not an action; use fail, force or yield", p.Default)
	}
	for i, r := range p.Rules {
		pr := policyRule{index: i, action: r.Action, names: r.Names, managers: r.Managers}
		if !validAction(r.Action) {
			return nil, fmt.Errorf("conflicts.rules[%d].action: %q is not an action; use fail, force or yield", i, r.Action)
		}
		if len(r.Kinds) > 0 {
			pr.kinds = map[schema.GroupKind]bool{}
			for _, k := range r.Kinds {
				pr.kinds[schema.ParseGroupKind(kindToGroupKind(k))] = true
			}
		}
		for j, g := range append(append([]string{}, r.Names...), r.Managers...) {
			if _, err := path.Match(g, ""); err != nil {
				return nil, fmt.Errorf("conflicts.rules[%d]: glob %q (#%d): %w", i, g, j, err)
			}
		}
		for j, s := range r.Paths {
			pat, err := paths.Parse(s)
			if err != nil {
				return nil, fmt.Errorf("conflicts.rules[%d].paths[%d]: %w", i, j, err)
			}
			pr.paths = append(pr.paths, pat)
		}
		out.rules = append(out.rules, pr)
	}
	return out, nil
}

// kindToGroupKind turns "apps/Deployment" into "Deployment.apps", the form
// schema.ParseGroupKind reads; "ConfigMap" stays as it is.
func kindToGroupKind(k string) string {
	for i := len(k) - 1; i >= 0; i-- {
		if k[i] == '/' {
			return k[i+1:] + "." + k[:i]
		}
	}
	return k
}

func validAction(a config.Action) bool {
	switch a {
	case config.ActionFail, config.ActionForce, config.ActionYield:
		return true
	}
	return false
}

// Decide returns the action for one conflict on one object. fp is the
// conflicting field as a structured path (nil when unknown: then only rules
// without paths can match).
func (p *Policy) Decide(ref planner.ObjectRef, c Conflict, fp fieldpath.Path) config.Action {
	for _, r := range p.rules {
		if r.matches(ref, c, fp) {
			return r.action
		}
	}
	return p.def
}

func (r policyRule) matches(ref planner.ObjectRef, c Conflict, fp fieldpath.Path) bool {
	if r.kinds != nil && !r.kinds[ref.GroupKind()] {
		return false
	}
	if r.names != nil && !anyGlob(r.names, ref.Name) {
		return false
	}
	if r.managers != nil && !anyGlob(r.managers, c.Manager) {
		return false
	}
	if r.paths != nil {
		if fp == nil {
			return false
		}
		ok := false
		for _, pat := range r.paths {
			if pat.Matches(fp) {
				ok = true
				break
			}
		}
		if !ok {
			return false
		}
	}
	return true
}

func anyGlob(globs []string, s string) bool {
	for _, g := range globs {
		if ok, _ := path.Match(g, s); ok {
			return true
		}
	}
	return false
}

// findPath returns the structured path in set whose API-server notation is
// s (the form conflict causes use), or nil.
func findPath(set *fieldpath.Set, s string) fieldpath.Path {
	if set == nil {
		return nil
	}
	var found fieldpath.Path
	set.Iterate(func(p fieldpath.Path) {
		if found == nil && p.String() == s {
			found = p.Copy()
		}
	})
	return found
}
