package drift

import (
	"sort"
	"strconv"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// notCheckedWarnings returns a warning for each managedFields entry of own
// that could not be decoded: its fields are not checked.
func notCheckedWarnings(ref planner.ObjectRef, own ownership.Ownership) []string {
	var out []string
	for _, inv := range own.Invalid {
		out = append(out, ref.String()+": "+inv.Error()+"; its fields are not checked")
	}
	return out
}

// ownerOf is the finding's view of a managedFields entry.
func ownerOf(e ownership.Entry) Owner {
	return Owner{Manager: e.Manager, Operation: string(e.Operation), Subresource: e.Subresource, Time: e.Time}
}

func ownersOfEntries(es []ownership.Entry) []Owner {
	var out []Owner
	for _, e := range es {
		out = append(out, ownerOf(e))
	}
	return out
}

// owners returns the entries that own path, sorted by manager, operation
// and subresource.
func owners(own ownership.Ownership, path fieldpath.Path) []Owner {
	return ownersOfEntries(own.Owners(path))
}

// ownersOfItself is owners without the entries that own only fields below
// path: the owners of an empty map or list itself.
func ownersOfItself(own ownership.Ownership, path fieldpath.Path) []Owner {
	return ownersOfEntries(own.OwnersOfItself(path))
}

// emptyContainer reports whether v is an empty map or list.
func emptyContainer(v any) bool {
	switch x := v.(type) {
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}

func sortOwners(os []Owner) {
	sort.SliceStable(os, func(i, j int) bool {
		a, b := os[i], os[j]
		if a.Manager != b.Manager {
			return a.Manager < b.Manager
		}
		if a.Operation != b.Operation {
			return a.Operation < b.Operation
		}
		return a.Subresource < b.Subresource
	})
}

// isKeyLeaf reports whether path ends in a key field of the list item it is
// in (`.containers[name="app"].name`).
func isKeyLeaf(path fieldpath.Path) bool {
	if len(path) < 2 {
		return false
	}
	last, item := path[len(path)-1], path[len(path)-2]
	if last.FieldName == nil || item.Key == nil {
		return false
	}
	_, ok := ownership.KeyValue(*item.Key, *last.FieldName)
	return ok
}

// lookup returns the value at path in an unstructured object. A keyed
// list item that omits a key field the schema defaults (a port's
// protocol) is matched when no item has the whole key.
func lookup(obj any, path fieldpath.Path) (any, bool) {
	return paths.LookupWith(obj, path, paths.LookupOptions{OmittedKeyFields: true})
}

// lookupLive is lookup on a live object, except that a Secret's
// .stringData.K (write-only: the server moves it to .data) is read from
// .data.K, decoded (paths.LookupStored).
func lookupLive(obj map[string]any, path fieldpath.Path, secret bool) (any, bool) {
	return paths.LookupStored(obj, path, secret, paths.LookupOptions{OmittedKeyFields: true})
}

// equalDeclared reports whether live holds what desired declares: maps are
// compared on desired's keys only (a defaulted key Git never declared is
// not compared), lists item by item, numbers by value (1 == 1.0) and
// resource quantities by amount ("500m" == "0.5", 1 == "1"). A zero value
// (false, 0, "", {}, []) that live does not hold is what the API server
// stores for it (omitAbsentZero), so it is equal too.
func equalDeclared(desired, live any) bool {
	if live == nil && omitAbsentZero(desired) {
		return true
	}
	switch d := desired.(type) {
	case nil:
		return live == nil
	case map[string]any:
		l, ok := live.(map[string]any)
		if !ok {
			return false
		}
		for k, dv := range d {
			lv, ok := l[k]
			if !ok {
				if dv == nil || omitAbsentZero(dv) {
					continue
				}
				return false
			}
			if !equalDeclared(dv, lv) {
				return false
			}
		}
		return true
	case []any:
		l, ok := live.([]any)
		if !ok {
			return false
		}
		if len(d) != len(l) {
			return false
		}
		for i := range d {
			if !equalDeclared(d[i], l[i]) {
				return false
			}
		}
		return true
	}
	if df, ok := number(desired); ok {
		if lf, ok := number(live); ok {
			return df == lf
		}
	}
	if desired == live {
		return true
	}
	return sameQuantity(desired, live)
}

// omitAbsentZero reports whether v is a zero value the API server does not
// store: the built-in kinds' fields are Go struct fields tagged omitempty,
// so false, 0, "", an empty map and an empty list declared in Git are
// absent from the stored object (.spec.minReadySeconds: 0, a volume
// mount's readOnly: false, annotations: {}). Only a value equal to the
// zero value counts: "0" and "false" are strings, not zero.
func omitAbsentZero(v any) bool {
	switch x := v.(type) {
	case bool:
		return !x
	case string:
		return x == ""
	}
	if emptyContainer(v) {
		return true
	}
	n, ok := number(v)
	return ok && n == 0
}

func number(v any) (float64, bool) {
	switch n := v.(type) {
	case int64:
		return float64(n), true
	case int:
		return float64(n), true
	case int32:
		return float64(n), true
	case float64:
		return n, true
	case float32:
		return float64(n), true
	}
	return 0, false
}

// sameQuantity reports whether two scalars are the same resource quantity.
// At least one must be a string (two equal numbers were handled before).
func sameQuantity(a, b any) bool {
	qa, ok := quantity(a)
	if !ok {
		return false
	}
	qb, ok := quantity(b)
	if !ok {
		return false
	}
	return qa.Cmp(qb) == 0
}

func quantity(v any) (resource.Quantity, bool) {
	var s string
	switch x := v.(type) {
	case string:
		s = x
	default:
		f, ok := number(v)
		if !ok {
			return resource.Quantity{}, false
		}
		s = strconv.FormatFloat(f, 'f', -1, 64)
	}
	if s == "" || strings.TrimSpace(s) != s {
		return resource.Quantity{}, false
	}
	q, err := resource.ParseQuantity(s)
	if err != nil {
		return resource.Quantity{}, false
	}
	return q, true
}

// timeOf is the zero-safe time of an owner.
func timeOf(o Owner) time.Time {
	if o.Time == nil {
		return time.Time{}
	}
	return *o.Time
}
