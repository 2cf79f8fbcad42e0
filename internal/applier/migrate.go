package applier

import (
	"context"
	"encoding/json"
	"fmt"
	"path"
	"slices"
	"sort"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/util/retry"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/planner"
)

// Migration says whose fields an app takes over from the tools that
// applied its objects before syncd (config apps[].migrate). The
// managers of client-side kubectl apply and before-first-apply are always
// taken over; the nil Migration takes over only them.
//
// A field moves only when the app's apply shares it with the legacy
// manager: Server-Side Apply shares a field exactly when the declared
// value equals the live one, so a move never changes a value. A field
// with another value is a conflict like any other, decided by the app's
// policy, unless the Migration forces (mode force) for that manager.
type Migration struct {
	from  []string // globs
	force bool
}

// MigrationSpec names the managers an app takes over from (path.Match
// globs) and whether a field they own with another value is taken
// without asking the policy (mode force).
type MigrationSpec struct {
	From  []string
	Force bool
}

// NewMigration returns the migration spec describes; nil means none. The
// config package validates the YAML a spec comes from; the error here is
// for a malformed glob in a spec built by hand.
func NewMigration(spec *MigrationSpec) (*Migration, error) {
	if spec == nil {
		return nil, nil
	}
	for i, g := range spec.From {
		if _, err := path.Match(g, ""); err != nil {
			return nil, fmt.Errorf("from[%d]: glob %q: %w", i, g, err)
		}
	}
	return &Migration{from: slices.Clone(spec.From), force: spec.Force}, nil
}

// takesOver reports whether manager's fields move to the app's managers
// when the app's apply shares them.
func (m *Migration) takesOver(manager string) bool {
	return clientSideManagers.Has(manager) || m.names(manager)
}

// forces reports whether a field manager owns with another value than
// the declared one is taken without asking the policy.
func (m *Migration) forces(manager string) bool {
	return m != nil && m.force && m.names(manager)
}

func (m *Migration) names(manager string) bool {
	return m != nil && ignore.MatchesAny(m.from, manager)
}

// Move is one field whose ownership went (or, in a dry run, would go)
// from a legacy manager to one of the app's managers, its value
// unchanged.
type Move struct {
	// Path is the field in the API server's notation.
	Path string
	// From is the legacy manager that owned it; To is the app's manager
	// that owns it now.
	From, To string
}

// String says what moved: `.data.color from "kubectl-client-side-apply"`.
func (m Move) String() string { return fmt.Sprintf("%s from %q", m.Path, m.From) }

// takeover is what taking the legacy managers' shared fields over does to
// one object's managedFields: the entries to write and, per app manager,
// the fields it now owns alone.
type takeover struct {
	entries []metav1.ManagedFieldsEntry
	moves   map[planner.FieldManager][]Move
	// from are the legacy managers that lose fields, sorted.
	from []string
	// dropLastApplied is set when no client-side apply entry is left:
	// client-side apply's record of the object has no owner any more.
	dropLastApplied bool
}

// empty reports whether the takeover changes nothing.
func (t takeover) empty() bool { return len(t.from) == 0 }

var lastAppliedPath = fieldpath.MakePathOrDie("metadata", "annotations", lastAppliedAnnotation)

// lastAppliedAndAbove is the last-applied annotation and the maps around
// it: what a client-side apply entry holds for its own bookkeeping.
var lastAppliedAndAbove = fieldpath.NewSet(
	fieldpath.MakePathOrDie("metadata"),
	fieldpath.MakePathOrDie("metadata", "annotations"),
	lastAppliedPath,
)

// planTakeover works out, on an object the app's managers (ours) have
// just applied (or, in a dry run, would apply), which fields of legacy
// managers they share: each such field leaves the legacy manager's entry
// and stays with the app's manager alone. Fields in defaulted (the legacy
// manager owns them, Git does not declare them, and the API server would
// store the same value without them: defaults it filled in when the
// legacy tool created the object) leave the entry too and are owned by
// nobody, as the defaults of an object syncd created are. An entry left
// with nothing but the structure around the app's fields (and, for
// client-side apply, its last-applied annotation) is dropped. Other
// fields the app does not declare stay with the legacy manager: a
// takeover never deletes or resets one. Only main-resource entries are
// considered (a status writer keeps status).
func planTakeover(u *unstructured.Unstructured, ours []planner.FieldManager, m *Migration, defaulted *fieldpath.Set) (takeover, error) {
	if defaulted == nil {
		defaulted = fieldpath.NewSet()
	}
	t := takeover{moves: map[planner.FieldManager][]Move{}}
	own := ownership.Decode(u)
	oursSet := fieldpath.NewSet()
	for _, o := range ours {
		oursSet = oursSet.Union(own.Applied(string(o)))
	}
	structure := prefixes(oursSet.Union(defaulted))
	clientSideLeft, clientSideDropped := false, false
	for _, e := range u.GetManagedFields() {
		if e.Subresource != "" || slices.Contains(ours, planner.FieldManager(e.Manager)) || !m.takesOver(e.Manager) {
			t.entries = append(t.entries, e)
			continue
		}
		// An entry the takeover rewrites must decode: dropping or
		// rewriting one it cannot read would lose its fields.
		decoded := ownership.DecodeEntries([]metav1.ManagedFieldsEntry{e})
		if len(decoded.Invalid) > 0 {
			return takeover{}, fmt.Errorf("managedFields of %s: %w", e.Manager, decoded.Invalid[0])
		}
		set := decoded.Entries[0].Set
		taken := set.Intersection(oursSet)
		if taken.Empty() {
			t.entries = append(t.entries, e)
			clientSideLeft = clientSideLeft || clientSideManagers.Has(e.Manager)
			continue
		}
		t.from = append(t.from, e.Manager)
		for _, o := range ours {
			taken.Leaves().Intersection(own.Applied(string(o)).Leaves()).Iterate(func(p fieldpath.Path) {
				t.moves[o] = append(t.moves[o], Move{Path: p.String(), From: e.Manager, To: string(o)})
			})
		}
		rest := set.Difference(taken).Difference(defaulted)
		if onlyStructure(rest, structure, clientSideManagers.Has(e.Manager)) {
			clientSideDropped = clientSideDropped || clientSideManagers.Has(e.Manager)
			continue
		}
		clientSideLeft = clientSideLeft || clientSideManagers.Has(e.Manager)
		raw, err := rest.ToJSON()
		if err != nil {
			return takeover{}, fmt.Errorf("managedFields of %s: %w", e.Manager, err)
		}
		e.FieldsV1 = &metav1.FieldsV1{Raw: raw}
		t.entries = append(t.entries, e)
	}
	sort.Strings(t.from)
	t.from = slices.Compact(t.from)
	for o := range t.moves {
		sort.Slice(t.moves[o], func(i, j int) bool {
			a, b := t.moves[o][i], t.moves[o][j]
			if a.Path != b.Path {
				return a.Path < b.Path
			}
			return a.From < b.From
		})
	}
	_, hasLastApplied := u.GetAnnotations()[lastAppliedAnnotation]
	t.dropLastApplied = hasLastApplied && clientSideDropped && !clientSideLeft
	return t, nil
}

// prefixes returns every proper prefix of the paths of set: the maps and
// list items the fields of set sit in.
func prefixes(set *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	set.Iterate(func(p fieldpath.Path) {
		for i := 1; i < len(p); i++ {
			out.Insert(p[:i].Copy())
		}
	})
	return out
}

// onlyStructure reports whether rest holds nothing a manager needs to
// keep: only maps and list items the app's fields and the released
// defaults sit in (structure)
// and, for client-side apply, its last-applied annotation and the maps
// around it.
func onlyStructure(rest, structure *fieldpath.Set, clientSide bool) bool {
	only := true
	rest.Iterate(func(p fieldpath.Path) {
		switch {
		case !only:
		case structure.Has(p):
		case clientSide && lastAppliedAndAbove.Has(p):
		default:
			only = false
		}
	})
	return only
}

// takeOver moves the fields the app's managers now share with legacy
// managers to the app's managers alone (planTakeover), by rewriting
// metadata.managedFields in a JSON patch guarded by the resourceVersion
// it was computed from; a concurrent write makes it read the object
// again and recompute. Then, when client-side apply has no entry left,
// its last-applied annotation goes. No value changes. In a dry run it
// only says what would move. It records the moves on changes.
func (r *objectRun) takeOver(ctx context.Context, ri dynamic.ResourceInterface, obj *planner.Object, u *unstructured.Unstructured, ours []planner.FieldManager, changes []Change) (*unstructured.Unstructured, error) {
	t, err := planTakeover(u, ours, r.ao.Migrate, nil)
	if err != nil || t.empty() {
		return u, err
	}
	defaulted := r.defaulted(ctx, ri, obj, u, leftovers(u, ours, r.ao.Migrate))
	if t, err = planTakeover(u, ours, r.ao.Migrate, defaulted); err != nil {
		return u, err
	}
	recordTakeover(t, changes)
	if r.a.opts.DryRun {
		return u, nil
	}
	first := true
	err = retry.RetryOnConflict(retry.DefaultBackoff, func() error {
		if !first {
			fresh, err := ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
			if err != nil {
				return err
			}
			u = fresh
			if t, err = planTakeover(u, ours, r.ao.Migrate, defaulted); err != nil || t.empty() {
				return err
			}
		}
		first = false
		patch, err := json.Marshal([]map[string]any{
			{"op": "replace", "path": "/metadata/managedFields", "value": t.entries},
			{"op": "replace", "path": "/metadata/resourceVersion", "value": u.GetResourceVersion()},
		})
		if err != nil {
			return err
		}
		res, err := ri.Patch(ctx, obj.Ref.Name, types.JSONPatchType, patch, metav1.PatchOptions{})
		if err == nil {
			u = res
		}
		return err
	})
	if err != nil {
		return nil, describeError(obj.Ref, fmt.Sprintf("take over the fields of %v", t.from), err)
	}
	if t.dropLastApplied {
		p := []byte(`[{"op":"remove","path":"/metadata/annotations/kubectl.kubernetes.io~1last-applied-configuration"}]`)
		if u, err = ri.Patch(ctx, obj.Ref.Name, types.JSONPatchType, p, metav1.PatchOptions{}); err != nil {
			return nil, describeError(obj.Ref, "drop "+lastAppliedAnnotation, err)
		}
	}
	return u, nil
}

// leftovers returns the leaf fields of the legacy managers' entries (as
// planTakeover picks them) that none of ours owns, but for client-side
// apply's last-applied annotation, which has its own rule.
func leftovers(u *unstructured.Unstructured, ours []planner.FieldManager, m *Migration) *fieldpath.Set {
	own := ownership.Decode(u)
	oursSet := fieldpath.NewSet()
	for _, o := range ours {
		oursSet = oursSet.Union(own.Applied(string(o)))
	}
	out := fieldpath.NewSet()
	for _, e := range own.Entries {
		if e.Subresource != "" || slices.Contains(ours, planner.FieldManager(e.Manager)) || !m.takesOver(e.Manager) {
			continue
		}
		out = out.Union(e.Set.Leaves().Difference(oursSet))
	}
	return out.Difference(fieldpath.NewSet(lastAppliedPath))
}

// defaulted returns the fields of candidates whose value the API server
// would store as it is now if the object did not set them (defaults),
// from a dry-run JSON patch that removes them all. A field it cannot
// tell about (the dry run is refused, say because the removal leaves an
// invalid object) is not in the set: it stays with its owner.
func (r *objectRun) defaulted(ctx context.Context, ri dynamic.ResourceInterface, obj *planner.Object, live *unstructured.Unstructured, candidates *fieldpath.Set) *fieldpath.Set {
	out := fieldpath.NewSet()
	var ops []map[string]any
	var fields []fieldpath.Path
	candidates.Iterate(func(p fieldpath.Path) {
		if ptr, ok := paths.Pointer(live.Object, p); ok && len(p) > 0 && p[len(p)-1].FieldName != nil {
			ops = append(ops, map[string]any{"op": "remove", "path": ptr})
			fields = append(fields, p.Copy())
		}
	})
	if len(ops) == 0 {
		return out
	}
	patch, err := json.Marshal(ops)
	if err != nil {
		return out
	}
	res, err := ri.Patch(ctx, obj.Ref.Name, types.JSONPatchType, patch, metav1.PatchOptions{DryRun: []string{metav1.DryRunAll}})
	if err != nil {
		return out
	}
	for _, p := range fields {
		was, _ := paths.Lookup(live.Object, p)
		if now, ok := paths.Lookup(res.Object, p); ok && equality.Semantic.DeepEqual(was, now) {
			out.Insert(p)
		}
	}
	return out
}

// recordTakeover puts a takeover's moves on the changes of the slices
// they went to, and the legacy managers on the first; a slice that only
// moved fields is configured (the object's managedFields are written).
func recordTakeover(t takeover, changes []Change) {
	for i := range changes {
		changes[i].Moved = append(changes[i].Moved, t.moves[changes[i].Manager]...)
		if len(t.moves[changes[i].Manager]) > 0 && changes[i].Action == Unchanged {
			changes[i].Action = Configured
		}
	}
	if len(changes) > 0 {
		if len(t.from) > 0 {
			rr := changes[0].resolvedRecord()
			rr.Migrated = append(rr.Migrated, t.from...)
		}
		if changes[0].Action == Unchanged {
			changes[0].Action = Configured
		}
	}
}
