package preview

import (
	"bytes"
	"maps"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// SensitiveMatcher says which fields of objects of a kind are sensitive
// (config.SensitiveFields is one): their values are shown as Redacted.
type SensitiveMatcher interface {
	// Kind reports whether any field of objects of gk may be sensitive.
	Kind(gk schema.GroupKind) bool
	// Matches reports whether the field at path is sensitive (a field
	// below a sensitive one is too).
	Matches(gk schema.GroupKind, path fieldpath.Path) bool
}

// DiffOptions tune DiffWith.
type DiffOptions struct {
	// Sensitive, when set, marks fields whose values the diff shows as
	// Redacted, or RedactedChanged on the dry-run side when the value
	// changes, as Secret data always is.
	Sensitive SensitiveMatcher
	// Declared are the fields Git declares for the object (the union of
	// its slices). With the objects' managedFields they name the list
	// items a key pattern (containers[name="app"]) selects.
	Declared *fieldpath.Set
}

// step is one concrete move into an unstructured value: a map key or a
// list index.
type step struct {
	field string
	index int // used when field is ""
	list  bool
}

// redactSensitive replaces, in a (live) and b (dry run), the values of
// the fields opts.Sensitive marks, the way redactSecrets does for Secret
// data. Candidate fields are every map key and list index of a and b, and
// every field in the managedFields of live and after and in
// opts.Declared (which name keyed list items as the API server does).
// Containers along a changed path are copied, never changed in place: a
// and b share values with the objects they were cleaned from. When any
// field is redacted, the last-applied-configuration annotation (a copy of
// the object) is redacted too.
func redactSensitive(a, b map[string]any, live, after *unstructured.Unstructured, opts DiffOptions) {
	m := opts.Sensitive
	if m == nil {
		return
	}
	obj := b
	if obj == nil {
		obj = a
	}
	if obj == nil {
		return
	}
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	gk := schema.GroupKind{Group: gv.Group, Kind: kind}
	if !m.Kind(gk) {
		return
	}

	targets := map[string]fieldpath.Path{}
	var walk func(v any, p fieldpath.Path)
	walk = func(v any, p fieldpath.Path) {
		if len(p) > 0 && m.Matches(gk, p) {
			targets[p.String()] = p.Copy()
			return
		}
		switch t := v.(type) {
		case map[string]any:
			for k, c := range t {
				walk(c, append(p, fieldpath.PathElement{FieldName: &k}))
			}
		case []any:
			for i, c := range t {
				walk(c, append(p, fieldpath.PathElement{Index: &i}))
			}
		}
	}
	walk(a, nil)
	walk(b, nil)
	sets := []*fieldpath.Set{opts.Declared}
	for _, u := range []*unstructured.Unstructured{live, after} {
		if u == nil {
			continue
		}
		for _, e := range u.GetManagedFields() {
			if e.FieldsV1 == nil || e.Subresource != "" {
				continue
			}
			s := &fieldpath.Set{}
			if err := s.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err == nil {
				sets = append(sets, s)
			}
		}
	}
	for _, s := range sets {
		if s == nil {
			continue
		}
		s.Iterate(func(p fieldpath.Path) {
			if m.Matches(gk, p) {
				targets[p.String()] = p.Copy()
			}
		})
	}
	if len(targets) == 0 {
		return
	}
	// Shallow paths first: below a redacted field there is nothing left
	// to find.
	keys := slices.Collect(maps.Keys(targets))
	sort.Slice(keys, func(i, j int) bool {
		if li, lj := len(targets[keys[i]]), len(targets[keys[j]]); li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	for _, k := range keys {
		p := targets[k]
		sa, okA := resolve(a, p)
		sb, okB := resolve(b, p)
		var va, vb any
		if okA {
			va, okA = get(a, sa)
		}
		if okB {
			vb, okB = get(b, sb)
		}
		if okA && !isRedacted(va) {
			set(a, sa, Redacted)
		}
		if okB && !isRedacted(vb) {
			mark := Redacted
			if okA && !isRedacted(va) && !equality.Semantic.DeepEqual(va, vb) {
				mark = RedactedChanged
			}
			set(b, sb, mark)
		}
	}
	for _, obj := range []map[string]any{a, b} {
		if obj == nil {
			continue
		}
		if _, found, _ := unstructured.NestedString(obj, "metadata", "annotations", lastApplied); found {
			set(obj, []step{{field: "metadata"}, {field: "annotations"}, {field: lastApplied}}, Redacted)
		}
	}
}

func isRedacted(v any) bool { return v == Redacted || v == RedactedChanged }

// resolve turns a field path into concrete steps in root, finding keyed
// and set list items the way paths.Lookup does.
func resolve(root map[string]any, p fieldpath.Path) ([]step, bool) {
	if root == nil {
		return nil, false
	}
	var out []step
	var v any = root
	for _, pe := range p {
		switch {
		case pe.FieldName != nil:
			mp, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = mp[*pe.FieldName]; !ok {
				return nil, false
			}
			out = append(out, step{field: *pe.FieldName})
		default:
			l, ok := v.([]any)
			if !ok {
				return nil, false
			}
			i := itemIndex(l, pe)
			if i < 0 {
				return nil, false
			}
			v = l[i]
			out = append(out, step{index: i, list: true})
		}
	}
	return out, true
}

// itemIndex returns the index of the list item pe names, -1 when none.
func itemIndex(l []any, pe fieldpath.PathElement) int {
	switch {
	case pe.Index != nil:
		if *pe.Index < len(l) {
			return *pe.Index
		}
	case pe.Value != nil:
		for i, item := range l {
			if value.Equals(value.NewValueInterface(item), *pe.Value) {
				return i
			}
		}
	case pe.Key != nil:
		for i, item := range l {
			mp, ok := item.(map[string]any)
			if !ok {
				continue
			}
			all := true
			for _, f := range *pe.Key {
				if !value.Equals(value.NewValueInterface(mp[f.Name]), f.Value) {
					all = false
					break
				}
			}
			if all {
				return i
			}
		}
	}
	return -1
}

func get(root map[string]any, steps []step) (any, bool) {
	var v any = root
	for _, s := range steps {
		if s.list {
			l, ok := v.([]any)
			if !ok || s.index >= len(l) {
				return nil, false
			}
			v = l[s.index]
			continue
		}
		mp, ok := v.(map[string]any)
		if !ok {
			return nil, false
		}
		if v, ok = mp[s.field]; !ok {
			return nil, false
		}
	}
	return v, true
}

// set stores v at steps in root, copying every map and list below root
// along the way (root itself is the caller's own map).
func set(root map[string]any, steps []step, v any) {
	if len(steps) == 0 {
		return
	}
	root[steps[0].field] = setIn(root[steps[0].field], steps[1:], v)
}

func setIn(cur any, steps []step, v any) any {
	if len(steps) == 0 {
		return v
	}
	s := steps[0]
	if s.list {
		l, ok := cur.([]any)
		if !ok || s.index >= len(l) {
			return cur
		}
		c := slices.Clone(l)
		c[s.index] = setIn(l[s.index], steps[1:], v)
		return c
	}
	mp, ok := cur.(map[string]any)
	if !ok {
		return cur
	}
	c := maps.Clone(mp)
	c[s.field] = setIn(mp[s.field], steps[1:], v)
	return c
}
