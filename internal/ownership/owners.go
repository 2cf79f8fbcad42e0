package ownership

import (
	"cmp"
	"slices"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Owners returns the entries that own the field at path (see Owns), sorted
// by manager, operation and subresource.
func (o Ownership) Owners(path fieldpath.Path) []Entry {
	return o.ownersBy(func(s *fieldpath.Set) bool { return Owns(s, path) })
}

// OwnersOfItself is Owners without the entries that own only fields below
// path: the owners of an empty map or list itself (see OwnsItself).
func (o Ownership) OwnersOfItself(path fieldpath.Path) []Entry {
	return o.ownersBy(func(s *fieldpath.Set) bool { return OwnsItself(s, path) })
}

func (o Ownership) ownersBy(owns func(*fieldpath.Set) bool) []Entry {
	var out []Entry
	for _, e := range o.Entries {
		if owns(e.Set) {
			out = append(out, e)
		}
	}
	slices.SortStableFunc(out, compareEntries)
	return out
}

// compareEntries orders entries by manager, operation and subresource.
func compareEntries(a, b Entry) int {
	return cmp.Or(
		cmp.Compare(a.Manager, b.Manager),
		cmp.Compare(a.Operation, b.Operation),
		cmp.Compare(a.Subresource, b.Subresource),
	)
}

// Owns reports whether set gives its manager the field at path: the path
// is a member, or an ancestor is a member with nothing below it (an atomic
// field owned whole), or the set holds fields below the path (a schema that
// is finer than the one the path was computed with). List items are matched
// by key subset, so a declared item [containerPort=80] matches the
// server's [containerPort=80,protocol="TCP"] once protocol was defaulted.
func Owns(set *fieldpath.Set, path fieldpath.Path) bool {
	s := set
	for i, pe := range path {
		child, hasChild := childOf(s, pe)
		member := memberOf(s, pe)
		if i == len(path)-1 {
			return member || (hasChild && !child.Empty())
		}
		if !hasChild {
			return member // an atomic ancestor owned whole
		}
		s = child
	}
	return false
}

// OwnsItself is Owns, except that fields below path do not count.
func OwnsItself(set *fieldpath.Set, path fieldpath.Path) bool {
	if len(path) == 0 {
		return false
	}
	parent := path[:len(path)-1]
	s := set
	for _, pe := range parent {
		child, hasChild := childOf(s, pe)
		if !hasChild {
			return memberOf(s, pe) // an atomic ancestor owned whole
		}
		s = child
	}
	return memberOf(s, path[len(path)-1])
}

func childOf(s *fieldpath.Set, pe fieldpath.PathElement) (*fieldpath.Set, bool) {
	if c, ok := s.Children.Get(pe); ok {
		return c, true
	}
	if pe.Key == nil {
		return nil, false
	}
	// Iterate, not range over All: smd's iterators do not stop early.
	var found *fieldpath.Set
	s.Children.Iterate(func(cpe fieldpath.PathElement) {
		if found == nil && keyMatches(pe, cpe) {
			found, _ = s.Children.Get(cpe)
		}
	})
	return found, found != nil
}

func memberOf(s *fieldpath.Set, pe fieldpath.PathElement) bool {
	if s.Members.Has(pe) {
		return true
	}
	if pe.Key == nil {
		return false
	}
	found := false
	s.Members.Iterate(func(m fieldpath.PathElement) {
		found = found || keyMatches(pe, m)
	})
	return found
}

// keyMatches reports whether every key field of want is in got's key with
// an equal value.
func keyMatches(want, got fieldpath.PathElement) bool {
	if want.Key == nil || got.Key == nil {
		return false
	}
	for _, f := range *want.Key {
		v, ok := KeyValue(*got.Key, f.Name)
		if !ok || !value.Equals(f.Value, v) {
			return false
		}
	}
	return true
}

// KeyValue returns the value of the key field name of a list item's key.
func KeyValue(key value.FieldList, name string) (value.Value, bool) {
	for _, f := range key {
		if f.Name == name {
			return f.Value, true
		}
	}
	return nil, false
}
