package redact

import (
	"encoding/base64"
	"maps"
	"slices"
	"strconv"
	"sync"
	"sync/atomic"
	"unicode/utf8"
)

// known are the secret values of every app the process planned, by app:
// Text, Error, Sprintf and LogHandler mask them all, wherever they appear,
// so an error, an Event, /status, a log line or an alert that quotes one
// in a shape Text does not recognise still shows none.
var known = &registry{sets: map[string]*Secrets{}}

// registry holds the sets of values by owner and their union, compiled.
type registry struct {
	mu    sync.Mutex
	sets  map[string]*Secrets
	union atomic.Pointer[Secrets]
}

// Remember makes s the secret values of owner (an app), replacing those
// remembered before; a nil s forgets them. From then on every text this
// package scrubs has them masked (Known). The planner calls it with each
// plan's values, so a value stays masked until a later plan of the same
// app no longer holds it.
func Remember(owner string, s *Secrets) {
	known.mu.Lock()
	defer known.mu.Unlock()
	if known.sets[owner].equal(s) {
		return
	}
	if s == nil {
		delete(known.sets, owner)
	} else {
		known.sets[owner] = s
	}
	all := make([]*Secrets, 0, len(known.sets))
	for _, set := range known.sets {
		all = append(all, set)
	}
	known.union.Store(Union(all...))
}

// Known returns text with every remembered secret value masked (Secrets.Mask).
func Known(text string) string { return known.union.Load().Mask(text) }

// KnownSecrets returns every remembered secret value (Remember) as one
// set, for outputs that print objects rather than text: Rules.WithSecrets
// masks them inside the object's strings. It may be nil.
func KnownSecrets() *Secrets { return known.union.Load() }

// Collect returns the text of every value obj (decoded JSON) holds at a
// hidden field: a Secret's data (as written, and decoded from base64 when
// it decodes to text) and stringData, the last-applied annotation, the
// app's sensitive paths and the fields added with WithFields. Leaves
// below a hidden field are collected one by one.
func (r *Rules) Collect(obj map[string]any) []string {
	gk := GroupKindOf(obj)
	var out []string
	for _, p := range r.targets(gk, []map[string]any{obj}, nil) {
		steps, ok := resolve(obj, p)
		if !ok {
			continue
		}
		v, ok := get(obj, steps)
		if !ok {
			continue
		}
		base64Data := IsSecret(gk) && len(p) == 2 && p[0].FieldName != nil && *p[0].FieldName == "data"
		out = appendLeaves(out, v, base64Data)
	}
	return out
}

// appendLeaves appends the text of every scalar in v; decode adds the
// base64-decoded text of strings too.
func appendLeaves(out []string, v any, decode bool) []string {
	switch t := v.(type) {
	case map[string]any:
		for _, c := range t {
			out = appendLeaves(out, c, decode)
		}
	case []any:
		for _, c := range t {
			out = appendLeaves(out, c, decode)
		}
	case string:
		out = append(out, t)
		if b, err := base64.StdEncoding.DecodeString(t); decode && err == nil && utf8.Valid(b) {
			out = append(out, string(b))
		}
	case int64:
		out = append(out, strconv.FormatInt(t, 10))
	case float64:
		out = append(out, strconv.FormatFloat(t, 'f', -1, 64))
	}
	return out
}

// WithSecrets returns r with the values of s masked wherever they appear
// in the strings of an object (Object, Pair, Value), not only in hidden
// fields. r is not changed; with a nil s, r itself is returned.
func (r *Rules) WithSecrets(s *Secrets) *Rules {
	if s == nil {
		return r
	}
	out := &Rules{secrets: s}
	if r != nil {
		out.rules = r.rules
		out.secrets = Union(r.secrets, s)
	}
	return out
}

// Secrets returns the values r masks inside strings (WithSecrets).
func (r *Rules) Secrets() *Secrets {
	if r == nil {
		return nil
	}
	return r.secrets
}

// Value returns v (a field's decoded value) with the values of r's
// secrets masked in every string it holds. v is not changed.
func (r *Rules) Value(v any) any {
	s := r.Secrets()
	if s == nil {
		return v
	}
	out, _ := masker{s}.one(v)
	return out
}

// masker masks secret values in the strings of decoded JSON values,
// copying only the maps and lists it changes.
type masker struct{ s *Secrets }

// one masks v; changed reports whether it masked anything.
func (m masker) one(v any) (out any, changed bool) {
	switch t := v.(type) {
	case string:
		masked := m.s.Mask(t)
		return masked, masked != t
	case map[string]any:
		var c map[string]any
		for k, e := range t {
			if ne, ch := m.one(e); ch {
				if c == nil {
					c = maps.Clone(t)
				}
				c[k] = ne
			}
		}
		if c == nil {
			return v, false
		}
		return c, true
	case []any:
		var c []any
		for i, e := range t {
			if ne, ch := m.one(e); ch {
				if c == nil {
					c = slices.Clone(t)
				}
				c[i] = ne
			}
		}
		if c == nil {
			return v, false
		}
		return c, true
	}
	return v, false
}

// side is one version of a value in a pair, masked.
type side struct {
	v       any
	changed bool
}

// two masks a and b, two versions of one value (a live object's and its
// dry run's). A string of b that masks to a's masked text although the
// strings differ has ChangedMarker in place of its secrets, so a diff
// still shows that it changes.
func (m masker) two(a, b any) (side, side) {
	switch bt := b.(type) {
	case string:
		na, cha := m.one(a)
		mb := m.s.Mask(bt)
		if at, ok := a.(string); ok && mb == na && at != bt && mb != bt {
			mb = m.s.MaskWith(bt, ChangedMarker)
		}
		return side{na, cha}, side{mb, mb != bt}
	case map[string]any:
		if am, ok := a.(map[string]any); ok {
			return m.twoMaps(am, bt)
		}
	case []any:
		if al, ok := a.([]any); ok {
			return m.twoLists(al, bt)
		}
	}
	na, cha := m.one(a)
	nb, chb := m.one(b)
	return side{na, cha}, side{nb, chb}
}

func (m masker) twoMaps(a, b map[string]any) (side, side) {
	var ca, cb map[string]any
	set := func(c *map[string]any, orig map[string]any, k string, s side) {
		if !s.changed {
			return
		}
		if *c == nil {
			*c = maps.Clone(orig)
		}
		(*c)[k] = s.v
	}
	for k, bv := range b {
		if av, ok := a[k]; ok {
			sa, sb := m.two(av, bv)
			set(&ca, a, k, sa)
			set(&cb, b, k, sb)
			continue
		}
		nb, ch := m.one(bv)
		set(&cb, b, k, side{nb, ch})
	}
	for k, av := range a {
		if _, ok := b[k]; !ok {
			na, ch := m.one(av)
			set(&ca, a, k, side{na, ch})
		}
	}
	return mapSide(ca, a), mapSide(cb, b)
}

func mapSide(c, orig map[string]any) side {
	if c == nil {
		return side{orig, false}
	}
	return side{c, true}
}

func (m masker) twoLists(a, b []any) (side, side) {
	var ca, cb []any
	set := func(c *[]any, orig []any, i int, s side) {
		if !s.changed {
			return
		}
		if *c == nil {
			*c = slices.Clone(orig)
		}
		(*c)[i] = s.v
	}
	for i := range max(len(a), len(b)) {
		switch {
		case i < len(a) && i < len(b):
			sa, sb := m.two(a[i], b[i])
			set(&ca, a, i, sa)
			set(&cb, b, i, sb)
		case i < len(a):
			na, ch := m.one(a[i])
			set(&ca, a, i, side{na, ch})
		default:
			nb, ch := m.one(b[i])
			set(&cb, b, i, side{nb, ch})
		}
	}
	return listSide(ca, a), listSide(cb, b)
}

func listSide(c, orig []any) side {
	if c == nil {
		return side{orig, false}
	}
	return side{c, true}
}
