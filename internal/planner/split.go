package planner

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"syncd.dev/syncd/internal/paths"
)

// identity is the set of fields that identify an object. They are in every
// slice, and the API server leaves them out of managedFields.
var (
	identityPaths = []fieldpath.Path{
		fieldpath.MakePathOrDie("apiVersion"),
		fieldpath.MakePathOrDie("kind"),
		fieldpath.MakePathOrDie("metadata", "name"),
		fieldpath.MakePathOrDie("metadata", "namespace"),
	}
	identity = fieldpath.NewSet(identityPaths...)
)

// isIdentityPattern reports whether a split pattern would claim an identity
// field.
func isIdentityPattern(p paths.Pattern) bool {
	// (fieldpath.Set.All's iterator does not support leaving the loop
	// early, so walk a plain slice.)
	for _, id := range identityPaths {
		if p.Matches(id) {
			return true
		}
	}
	return false
}

// AtomicPathError is a split path that reaches inside an atomic list or
// map: the API server owns such a value as a whole, so part of it cannot be
// given to another manager.
type AtomicPathError struct {
	Rule    int // index in the app's split rules
	Manager FieldManager
	Pattern string // the split path as configured
	Atomic  string // the atomic value's path in the object
}

// Error implements error.
func (e *AtomicPathError) Error() string {
	return fmt.Sprintf("split[%d] (manager %s): path %s reaches inside %s, which is atomic (the API server owns it as a whole): split at %s or above instead",
		e.Rule, e.Manager, e.Pattern, e.Atomic, e.Atomic)
}

// split cuts obj (typed as tv) into one slice per manager. matched records
// which rule paths matched a field. A deduced value (no schema known)
// cannot be cut: it goes whole to the default manager, and a split rule
// claiming any of it is an error.
func (p *Planner) split(obj *unstructured.Unstructured, tv *typed.TypedValue, deduced bool, matched [][]bool) ([]Slice, error) {
	full, err := tv.ToFieldSet()
	if err != nil {
		return nil, fmt.Errorf("field set: %w", err)
	}
	gk := obj.GroupVersionKind().GroupKind()
	var rules []int
	for i, r := range p.rules {
		if r.appliesTo(gk) {
			rules = append(rules, i)
		}
	}

	sets := make([]*fieldpath.Set, 1+len(p.managers))
	for i := range sets {
		sets[i] = fieldpath.NewSet()
	}
	var atomicErr error
	for path := range full.All() {
		if identity.Has(path) {
			continue
		}
		slot := 0
	rules:
		for _, ri := range rules {
			r := p.rules[ri]
			for j, pat := range r.paths {
				if pat.Matches(path) {
					slot = r.slot
					matched[ri][j] = true
					break rules
				}
				if atomicErr == nil && pat.Below(path) && isAtomic(full, path, obj.Object) {
					atomicErr = &AtomicPathError{Rule: r.index, Manager: r.manager, Pattern: pat.String(), Atomic: path.String()}
				}
			}
		}
		sets[slot].Insert(path)
	}
	if deduced {
		for slot := 1; slot < len(sets); slot++ {
			if !sets[slot].Empty() {
				return nil, fmt.Errorf("split rules of manager %s match fields of %s, whose schema is unknown offline: only objects with a known schema (built-in kinds, CRDs in the same render, or the cluster's schema) can be split", p.Managers()[slot], obj.GroupVersionKind().GroupKind())
			}
		}
		hash, err := hashObject(obj)
		if err != nil {
			return nil, err
		}
		// Desired is shared, never written to: the applier copies what
		// it sends.
		return []Slice{{Manager: p.manager, Object: obj, Fields: full.Difference(identity), Hash: hash}}, nil
	}
	if atomicErr != nil {
		return nil, atomicErr
	}

	managers := p.Managers()
	if slot, ok := soleSlot(sets); ok && plain(obj.Object) {
		// One manager holds every field and the object has no empty
		// map or list and no null (kept conservative: those are where
		// a field set and the object could part): the extracted slice
		// would equal the object (TestWholeSliceMatchesExtraction).
		// Share Desired rather than extract a second copy of every
		// unsplit object.
		hash, err := hashObject(obj)
		if err != nil {
			return nil, fmt.Errorf("manager %s: %w", managers[slot], err)
		}
		return []Slice{{Manager: managers[slot], Object: obj, Fields: sets[slot], Hash: hash}}, nil
	}
	var out []Slice
	for slot, set := range sets {
		if set.Empty() {
			continue
		}
		s, err := makeSlice(obj, tv, managers[slot], set)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	if len(out) == 0 {
		// Nothing but identity (a bare Namespace): the default manager
		// still applies it.
		s, err := makeSlice(obj, tv, p.manager, fieldpath.NewSet())
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}

// soleSlot returns the one slot whose set is not empty, if exactly one is.
func soleSlot(sets []*fieldpath.Set) (int, bool) {
	slot := -1
	for i, set := range sets {
		if set.Empty() {
			continue
		}
		if slot >= 0 {
			return 0, false
		}
		slot = i
	}
	return slot, slot >= 0
}

// plain reports whether v holds no empty map, no empty list and no null
// anywhere.
func plain(v any) bool {
	switch x := v.(type) {
	case nil:
		return false
	case map[string]any:
		if len(x) == 0 {
			return false
		}
		for _, e := range x {
			if !plain(e) {
				return false
			}
		}
	case []any:
		if len(x) == 0 {
			return false
		}
		for _, e := range x {
			if !plain(e) {
				return false
			}
		}
	}
	return true
}

// makeSlice extracts set from tv, keeping list keys, and adds identity.
func makeSlice(obj *unstructured.Unstructured, tv *typed.TypedValue, m FieldManager, set *fieldpath.Set) (Slice, error) {
	cut := tv.ExtractItems(set, typed.WithAppendKeyFields())
	fields, err := cut.ToFieldSet()
	if err != nil {
		return Slice{}, fmt.Errorf("manager %s: field set of the slice: %w", m, err)
	}
	fields = fields.Difference(identity)
	content, _ := cut.AsValue().Unstructured().(map[string]any)
	if content == nil {
		content = map[string]any{}
	}
	u := &unstructured.Unstructured{Object: content}
	u.SetAPIVersion(obj.GetAPIVersion())
	u.SetKind(obj.GetKind())
	u.SetName(obj.GetName())
	if ns := obj.GetNamespace(); ns != "" {
		u.SetNamespace(ns)
	}
	hash, err := hashObject(u)
	if err != nil {
		return Slice{}, fmt.Errorf("manager %s: %w", m, err)
	}
	return Slice{Manager: m, Object: u, Fields: fields, Hash: hash}, nil
}

// hashObject returns the hex sha256 of the object's canonical JSON
// (encoding/json sorts map keys).
func hashObject(u *unstructured.Unstructured) (string, error) {
	b, err := json.Marshal(u.Object)
	if err != nil {
		return "", fmt.Errorf("encode apply configuration: %w", err)
	}
	sum := sha256.Sum256(b)
	return hex.EncodeToString(sum[:]), nil
}

// isAtomic reports whether path holds a non-empty list or map that the
// field set does not descend into: the schema makes it atomic.
func isAtomic(set *fieldpath.Set, path fieldpath.Path, obj map[string]any) bool {
	node := set
	for _, pe := range path {
		next, ok := node.Children.Get(pe)
		if !ok {
			node = nil
			break
		}
		node = next
	}
	if node != nil && !node.Empty() {
		return false
	}
	v, ok := paths.Lookup(obj, path)
	if !ok {
		return false
	}
	switch x := v.(type) {
	case map[string]any:
		return len(x) > 0
	case []any:
		return len(x) > 0
	}
	return false
}
