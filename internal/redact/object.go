package redact

import (
	"maps"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/paths"
)

// GroupKindOf returns the group and kind an object (decoded JSON) declares.
func GroupKindOf(obj map[string]any) schema.GroupKind {
	apiVersion, _ := obj["apiVersion"].(string)
	kind, _ := obj["kind"].(string)
	gv, _ := schema.ParseGroupVersion(apiVersion)
	return schema.GroupKind{Group: gv.Group, Kind: kind}
}

// Object returns obj (decoded JSON) with the value of every hidden field
// replaced by Marker, and r's secrets (WithSecrets) masked inside every
// string. obj is not changed: the containers along a hidden
// path are copied, everything else is shared with obj. fields are field
// sets that name obj's fields (a slice's fields, managedFields): a rule
// that selects list items by key (containers[name="app"]) is matched
// through them; map keys and list indexes are always matched.
func (r *Rules) Object(obj map[string]any, fields ...*fieldpath.Set) map[string]any {
	_, out := r.Pair(nil, obj, fields...)
	return out
}

// Pair hides the values of before and after, two versions of one object
// (a live object and its dry run), for a diff: a hidden value is Marker,
// or ChangedMarker in after when it differs from before's. Either may be
// nil. r's secrets (WithSecrets) are masked inside every string of both;
// a string of after that differs from before's only inside a secret
// shows ChangedMarker there. Neither is changed; the results share what
// was not hidden.
func (r *Rules) Pair(before, after map[string]any, fields ...*fieldpath.Set) (map[string]any, map[string]any) {
	obj := after
	if obj == nil {
		obj = before
	}
	if obj == nil {
		return before, after
	}
	gk := GroupKindOf(obj)
	targets := r.targets(gk, []map[string]any{before, after}, fields)
	if len(targets) > 0 {
		if before != nil {
			before = maps.Clone(before)
		}
		if after != nil {
			after = maps.Clone(after)
		}
		for _, p := range targets {
			hidePair(before, after, p)
		}
	}
	return r.maskSecrets(before, after)
}

// maskSecrets masks r's secrets (WithSecrets) in the strings of before
// and after, a value's two versions.
func (r *Rules) maskSecrets(before, after map[string]any) (map[string]any, map[string]any) {
	s := r.Secrets()
	if s == nil {
		return before, after
	}
	var a, b any
	if before != nil {
		a = before
	}
	if after != nil {
		b = after
	}
	sa, sb := masker{s}.two(a, b)
	before, _ = sa.v.(map[string]any)
	after, _ = sb.v.(map[string]any)
	return before, after
}

// hidePair hides the value at p in a and b.
func hidePair(a, b map[string]any, p fieldpath.Path) {
	sa, okA := resolve(a, p)
	sb, okB := resolve(b, p)
	var va, vb any
	if okA {
		va, okA = get(a, sa)
	}
	if okB {
		vb, okB = get(b, sb)
	}
	if okA && !IsMarker(va) {
		set(a, sa, Marker)
	}
	if okB && !IsMarker(vb) {
		mark := Marker
		if okA && !IsMarker(va) && !equality.Semantic.DeepEqual(va, vb) {
			mark = ChangedMarker
		}
		set(b, sb, mark)
	}
}

// targets returns the hidden paths found in objs and fields, shallowest
// first, none below another.
func (r *Rules) targets(gk schema.GroupKind, objs []map[string]any, fields []*fieldpath.Set) []fieldpath.Path {
	found := map[string]fieldpath.Path{}
	for _, o := range objs {
		if o != nil {
			r.walk(gk, o, nil, found)
		}
	}
	for _, s := range fields {
		if s == nil {
			continue
		}
		s.Iterate(func(p fieldpath.Path) {
			if r.Path(gk, p) && !keepKeys(gk, p) {
				found[p.String()] = p.Copy()
			}
		})
	}
	keys := slices.Collect(maps.Keys(found))
	sort.Slice(keys, func(i, j int) bool {
		if li, lj := len(found[keys[i]]), len(found[keys[j]]); li != lj {
			return li < lj
		}
		return keys[i] < keys[j]
	})
	out := make([]fieldpath.Path, 0, len(keys))
	for _, k := range keys {
		out = append(out, found[k])
	}
	return out
}

// walk adds to found every hidden path of v, a map key or list index at a
// time, not descending below one.
func (r *Rules) walk(gk schema.GroupKind, v any, p fieldpath.Path, found map[string]fieldpath.Path) {
	if len(p) > 0 && r.Path(gk, p) {
		if _, isMap := v.(map[string]any); !isMap || !keepKeys(gk, p) {
			found[p.String()] = p.Copy()
			return
		}
	}
	switch t := v.(type) {
	case map[string]any:
		for k, c := range t {
			r.walk(gk, c, append(p, fieldpath.PathElement{FieldName: &k}), found)
		}
	case []any:
		for i, c := range t {
			r.walk(gk, c, append(p, fieldpath.PathElement{Index: &i}), found)
		}
	}
}

// keepKeys reports whether p is a Secret's data or stringData map, whose
// keys stay visible when its values are hidden.
func keepKeys(gk schema.GroupKind, p fieldpath.Path) bool {
	return IsSecret(gk) && len(p) == 1 && p[0].FieldName != nil &&
		(*p[0].FieldName == "data" || *p[0].FieldName == "stringData")
}

// step is one concrete move into a decoded JSON value: a map key or a
// list index.
type step struct {
	field string
	index int // used when list
	list  bool
}

// resolve turns a field path into concrete steps in root, finding keyed
// and set list items as the API server names them.
func resolve(root map[string]any, p fieldpath.Path) ([]step, bool) {
	if root == nil {
		return nil, false
	}
	var out []step
	var v any = root
	for _, pe := range p {
		if pe.FieldName != nil {
			mp, ok := v.(map[string]any)
			if !ok {
				return nil, false
			}
			if v, ok = mp[*pe.FieldName]; !ok {
				return nil, false
			}
			out = append(out, step{field: *pe.FieldName})
			continue
		}
		l, ok := v.([]any)
		if !ok {
			return nil, false
		}
		i := paths.ItemIndex(l, pe)
		if i < 0 {
			return nil, false
		}
		v = l[i]
		out = append(out, step{index: i, list: true})
	}
	return out, true
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
// along the way (root itself is the caller's own copy).
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
