package applier

import (
	"fmt"
	"path"
	"slices"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// ConflictAction is what the applier does about one field conflict.
type ConflictAction string

const (
	// ConflictFail refuses the slice: nothing of it is written and the
	// conflict is reported.
	ConflictFail ConflictAction = "fail"
	// ConflictForce takes the field from the other manager.
	ConflictForce ConflictAction = "force"
	// ConflictYield leaves the field to the other manager: the slice is
	// applied without it.
	ConflictYield ConflictAction = "yield"
)

// valid reports whether a is one of the actions.
func (a ConflictAction) valid() bool {
	return a == ConflictFail || a == ConflictForce || a == ConflictYield
}

// PolicyRule matches conflicts by the object's kind and name, the field
// and the other manager; an empty list matches anything.
type PolicyRule struct {
	Kinds []schema.GroupKind
	// Names are path.Match globs on the object's name.
	Names []string
	Paths []paths.Pattern
	// Managers are path.Match globs on the other manager's name.
	Managers []string
	Action   ConflictAction
}

// PolicySpec is a conflict policy: the first rule that matches a
// conflict decides it; otherwise Default does (empty: fail).
type PolicySpec struct {
	Default ConflictAction
	Rules   []PolicyRule
}

// Policy decides, per conflicting field, whether an apply fails, forces or
// yields: the first rule that matches the object's kind and name, the
// field and the other manager wins; otherwise the default applies.
type Policy struct {
	def   ConflictAction
	rules []PolicyRule
}

// failPolicy is the policy of an app without one: every conflict fails.
func failPolicy() *Policy { return &Policy{def: ConflictFail} }

// NewPolicy returns the policy spec describes. The config package
// validates the YAML a spec comes from and names its fields; the errors
// here are for callers that build a spec by hand: an unknown action or a
// malformed glob, by rule index.
func NewPolicy(spec PolicySpec) (*Policy, error) {
	out := &Policy{def: spec.Default, rules: slices.Clone(spec.Rules)}
	if out.def == "" {
		out.def = ConflictFail
	}
	if !out.def.valid() {
		return nil, fmt.Errorf("default: %q is not an action; use fail, force or yield", spec.Default)
	}
	for i, r := range spec.Rules {
		if !r.Action.valid() {
			return nil, fmt.Errorf("rules[%d].action: %q is not an action; use fail, force or yield", i, r.Action)
		}
		for _, g := range slices.Concat(r.Names, r.Managers) {
			if _, err := path.Match(g, ""); err != nil {
				return nil, fmt.Errorf("rules[%d]: glob %q: %w", i, g, err)
			}
		}
	}
	return out, nil
}

// Decide returns the action for one conflict on one object. fp is the
// conflicting field as a structured path (nil when unknown: then only rules
// without paths can match).
func (p *Policy) Decide(ref planner.ObjectRef, c Conflict, fp fieldpath.Path) ConflictAction {
	for _, r := range p.rules {
		if r.matches(ref, c, fp) {
			return r.Action
		}
	}
	return p.def
}

// matches reports whether the rule decides conflict c on ref's field fp.
func (r PolicyRule) matches(ref planner.ObjectRef, c Conflict, fp fieldpath.Path) bool {
	switch {
	case len(r.Kinds) > 0 && !slices.Contains(r.Kinds, ref.GroupKind()):
		return false
	case len(r.Names) > 0 && !ignore.MatchesAny(r.Names, ref.Name):
		return false
	case len(r.Managers) > 0 && !ignore.MatchesAny(r.Managers, c.Manager):
		return false
	case len(r.Paths) > 0:
		return fp != nil && slices.ContainsFunc(r.Paths, func(p paths.Pattern) bool { return p.Matches(fp) })
	}
	return true
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
