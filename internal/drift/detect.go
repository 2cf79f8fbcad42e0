package drift

import (
	"sort"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// FieldRef names one field of one object and the manager involved, for the
// Yielded and HandoffPending options.
type FieldRef struct {
	Object planner.ObjectRef
	// Manager is the manager the field was yielded to, or the handoff
	// manager holding it.
	Manager planner.FieldManager
	// Path is the field in the API server's notation (".spec.replicas").
	Path string
}

// Options are per-call settings of Detect. The zero value detects with the
// plan's managers only.
type Options struct {
	// Managers are more of syncd's managers for the app, besides the
	// managers of the plan's slices (e.g. a split manager that has no
	// slice on some object, or a manager being migrated away from). A
	// field they own counts as syncd's.
	Managers []planner.FieldManager
	// Yielded are fields the applier yielded to another manager on
	// purpose; they are reported as Yielded, not as drift.
	Yielded []FieldRef
	// HandoffPending are fields held by a handoff manager; they are
	// reported as HandoffPending, not as drift. Fields owned by a
	// "<syncd manager>-handoff" manager are reported so without being
	// listed here.
	HandoffPending []FieldRef
	// Flaps, when set, adds a Flapping finding for every declared field
	// it reports as flapping.
	Flaps *FlapDetector
	// Yield, when set, is the app's conflict policy: a declared field no
	// syncd manager owns any more, owned by a manager the policy yields
	// it to, is reported as Yielded (information), not TakenOver. It is
	// what the applier would do about that field on the next apply.
	Yield YieldPolicy
	// Sensitive are the app's redaction rules (redact.ForApp): the
	// Desired and Live values of the fields they hide are replaced by
	// redact.Marker. Nil applies the built-in rules (Secret data and
	// stringData, the last-applied annotation), which always apply.
	Sensitive *redact.Rules
	// Normalized, when set, is what the API server would store for
	// syncd's slices (Normalize): a declared leaf whose live value is not
	// Git's text but is the value the server stores for it is not drift.
	// Without it values are compared with Git's text, zero values the
	// server omits excepted.
	Normalized Normalized
	// Unreadable are plan objects the live read was not allowed to read
	// (Live's unreadable): each is a warning "not readable by <By>", with
	// no finding and no value of it, instead of a Deleted finding.
	Unreadable Unreadable
}

// Unreadable are plan objects whoever read the live objects (By: an
// app's service account, identity.Name) may not read.
type Unreadable struct {
	By      string
	Objects []planner.ObjectRef
}

// set returns the unreadable objects by key.
func (u Unreadable) set() map[objKey]bool {
	out := make(map[objKey]bool, len(u.Objects))
	for _, o := range u.Objects {
		out[keyOf(o)] = true
	}
	return out
}

// warning is the report's line for an unreadable object: its name only.
func (u Unreadable) warning(ref planner.ObjectRef) string {
	by := u.By
	if by == "" {
		by = "syncd"
	}
	return ref.String() + ": not readable by " + by + " (Forbidden): its drift is not checked and none of its values are shown"
}

// YieldPolicy says whether an app's conflict policy yields the field at
// path of an object to another manager (config action "yield").
type YieldPolicy interface {
	Yields(ref planner.ObjectRef, manager string, path fieldpath.Path) bool
}

// objKey is an object's identity without its version.
type objKey struct{ Group, Kind, Namespace, Name string }

func keyOf(r planner.ObjectRef) objKey {
	return objKey{r.Group, r.Kind, r.Namespace, r.Name}
}

// Detect compares each object of plan with its live copy and returns the
// findings, sorted by object, path and class. A live object that is nil or
// missing from live means the object was deleted. Detect does no I/O and
// never changes its arguments.
func Detect(plan *planner.Plan, live map[planner.ObjectRef]*unstructured.Unstructured, opts Options) *Report {
	byKey := make(map[objKey]*unstructured.Unstructured, len(live))
	for r, o := range live {
		byKey[keyOf(r)] = o
	}
	d := newDetector(plan, opts)
	r := &Report{}
	unreadable := opts.Unreadable.set()
	for i := range plan.Objects {
		obj := &plan.Objects[i]
		if unreadable[keyOf(obj.Ref)] {
			r.Warnings = append(r.Warnings, opts.Unreadable.warning(obj.Ref))
			continue
		}
		fs, warns := d.object(obj, byKey[keyOf(obj.Ref)])
		r.Findings = append(r.Findings, fs...)
		r.Warnings = append(r.Warnings, warns...)
	}
	r.sort()
	return r
}

// detector holds what Detect needs across objects of one plan.
type detector struct {
	app      string
	managers map[string]bool
	opts     Options
	yielded  map[objKey]map[string]FieldRef
	handoff  map[objKey]map[string]FieldRef
	// normalized is Options.Normalized by object and manager name; the
	// Watcher adds its own dry runs to it.
	normalized map[objKey]map[string]*unstructured.Unstructured
}

func newDetector(plan *planner.Plan, opts Options) *detector {
	d := &detector{app: plan.App, managers: map[string]bool{}, opts: opts,
		yielded: map[objKey]map[string]FieldRef{}, handoff: map[objKey]map[string]FieldRef{},
		normalized: normalizedIndex(opts.Normalized)}
	for _, m := range opts.Managers {
		d.managers[string(m)] = true
	}
	for _, o := range plan.Objects {
		for _, s := range o.Slices {
			d.managers[string(s.Manager)] = true
		}
	}
	index := func(dst map[objKey]map[string]FieldRef, refs []FieldRef) {
		for _, f := range refs {
			k := keyOf(f.Object)
			if dst[k] == nil {
				dst[k] = map[string]FieldRef{}
			}
			dst[k][f.Path] = f
		}
	}
	index(d.yielded, opts.Yielded)
	index(d.handoff, opts.HandoffPending)
	return d
}

// isSecret reports whether ref is a core Secret, whose stringData is read
// from data.
func isSecret(ref planner.ObjectRef) bool { return redact.IsSecret(ref.GroupKind()) }

// sameValue reports whether live holds what manager declares at path:
// Git's text compared by equalDeclared, or else the server's form of it
// (storedAsDeclared).
func (d *detector) sameValue(ref planner.ObjectRef, manager string, path fieldpath.Path, desired, live any) bool {
	return equalDeclared(desired, live) || d.storedAsDeclared(ref, manager, path, live)
}

// isSyncd reports whether m is one of syncd's managers (handoff managers
// excluded).
func (d *detector) isSyncd(m string) bool { return d.managers[m] }

// isHandoff reports whether m is the handoff manager of one of syncd's
// managers.
func (d *detector) isHandoff(m string) bool {
	base, ok := applier.HandoffOwner(m)
	return ok && d.managers[string(base)]
}

// redact hides f's values when package redact's rules hide the field at
// p, and records p as f.FieldPath for the outputs that redact again. p is
// nil for object-level findings, which carry no values; a Secret finding
// without a path that does carry values is hidden whole.
func (d *detector) redact(f *Finding, p fieldpath.Path) {
	f.FieldPath = p
	gk := f.Ref.GroupKind()
	hide := d.opts.Sensitive.Path(gk, p)
	if p == nil {
		hide = redact.IsSecret(gk) && (f.Desired != nil || f.Live != nil)
	}
	if !hide {
		return
	}
	f.Redacted = true
	if f.Desired != nil {
		f.Desired = redact.Marker
	}
	if f.Live != nil {
		f.Live = redact.Marker
	}
}

// yieldedTo returns the first owner, not one of syncd's or a handoff
// manager, that the conflict policy yields the field at p to; "" when
// there is none or no policy.
func (d *detector) yieldedTo(ref planner.ObjectRef, os []Owner, p fieldpath.Path) string {
	if d.opts.Yield == nil {
		return ""
	}
	for _, o := range os {
		if !d.isSyncd(o.Manager) && !d.isHandoff(o.Manager) && d.opts.Yield.Yields(ref, o.Manager, p) {
			return o.Manager
		}
	}
	return ""
}

// culprit is the first owner that is neither syncd's nor a handoff manager.
func (d *detector) culprit(os []Owner) string {
	for _, o := range os {
		if !d.isSyncd(o.Manager) && !d.isHandoff(o.Manager) {
			return o.Manager
		}
	}
	return ""
}

// declared is one leaf field Git declares.
type declared struct {
	path    fieldpath.Path
	str     string
	manager string
	// empty is set when Git declares an empty map or list there
	// (annotations: {}): it claims the container only, so managers of
	// keys inside it (a controller's annotation) do not own it, and it is
	// not reported when nobody owns the container itself.
	empty bool
}

// owners returns the entries that own the declared leaf.
func (l declared) owners(entries []entry) []Owner {
	if l.empty {
		return ownersOfItself(entries, l.path)
	}
	return owners(entries, l.path)
}

// declaredLeaves returns the leaf fields of obj's slices, sorted by path,
// each with the first manager that declares it. Key fields of list items
// are left out when the item declares another field (they are shared by
// construction and say nothing the other field does not).
func declaredLeaves(obj *planner.Object) []declared {
	all := &fieldpath.Set{}
	for _, s := range obj.Slices {
		if s.Fields != nil {
			all = all.Union(s.Fields)
		}
	}
	var out []declared
	seen := map[string]bool{}
	for _, s := range obj.Slices {
		if s.Fields == nil {
			continue
		}
		for p := range s.Fields.Leaves().All() {
			str := p.String()
			if seen[str] {
				continue
			}
			seen[str] = true
			if isKeyLeaf(p) && itemHasOtherLeaves(all, p) {
				continue
			}
			v, _ := lookup(obj.Desired.Object, p)
			out = append(out, declared{path: p.Copy(), str: str, manager: string(s.Manager), empty: emptyContainer(v)})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].str < out[j].str })
	return out
}

// itemHasOtherLeaves reports whether the list item holding the key field
// at path has a declared leaf that is not one of its keys.
func itemHasOtherLeaves(all *fieldpath.Set, path fieldpath.Path) bool {
	item := path[:len(path)-1]
	s := all
	for _, pe := range item {
		c, ok := s.Children.Get(pe)
		if !ok {
			return false
		}
		s = c
	}
	// Iterate, not range over All: smd's iterators do not stop early.
	other := false
	s.Leaves().Iterate(func(p fieldpath.Path) {
		if len(p) == 1 && p[0].FieldName != nil {
			if _, isKey := keyValue(*item[len(item)-1].Key, *p[0].FieldName); isKey {
				return
			}
		}
		other = true
	})
	return other
}

// object returns the findings of one object.
func (d *detector) object(obj *planner.Object, live *unstructured.Unstructured) ([]Finding, []string) {
	ref := obj.Ref
	base := Finding{App: d.app, Object: objectOf(ref), Ref: ref}
	if len(obj.Slices) > 0 {
		base.DeclaredBy = string(obj.Slices[0].Manager)
	}
	if live == nil {
		f := base
		f.Class = Deleted
		f.Owners = []Owner{}
		return []Finding{f}, nil
	}
	entries, errs := decodeManagedFields(live)
	var warns []string
	for _, err := range errs {
		warns = append(warns, ref.String()+": "+err.Error())
	}
	secret := isSecret(ref)
	leaves := declaredLeaves(obj)
	var out []Finding
	add := func(f Finding, p fieldpath.Path) {
		if f.Owners == nil {
			f.Owners = []Owner{}
		}
		f.Differs = !d.sameValue(ref, f.DeclaredBy, p, f.Desired, f.Live)
		d.redact(&f, p)
		out = append(out, f)
	}

	// Unmanaged: syncd's managers are all gone from the object and
	// take-overs do not explain it (managedFields were wiped, or the object
	// was never applied by syncd). A field owned by nobody whose value is
	// still there is then folded into the object-level finding.
	present := false
	for _, e := range entries {
		if d.isSyncd(e.Manager) {
			present = true
		}
	}
	unexplained := func(l declared) bool {
		if present || len(l.owners(entries)) > 0 {
			return false
		}
		_, ok := lookupLive(live.Object, l.path, secret)
		return ok
	}
	if !present && len(leaves) > 0 {
		emit := len(entries) == 0
		for _, l := range leaves {
			emit = emit || unexplained(l)
		}
		if emit {
			f := base
			f.Class = Unmanaged
			for _, e := range entries {
				f.Owners = append(f.Owners, e.Owner)
			}
			sortOwners(f.Owners)
			f.Culprit = d.culprit(f.Owners)
			add(f, nil)
		}
	}

	reported := map[string]bool{}
	for _, l := range leaves {
		if unexplained(l) {
			continue
		}
		f := base
		f.Path = l.str
		f.DeclaredBy = l.manager
		f.Owners = l.owners(entries)
		if l.empty && len(f.Owners) == 0 {
			// Nobody owns the empty map or list itself: keys were put
			// in it (by the applier, a controller), which Git's {} or
			// [] does not contradict, and they have owners of their own.
			continue
		}
		f.Culprit = d.culprit(f.Owners)
		f.Desired, _ = lookup(obj.Desired.Object, l.path)
		f.Live, _ = lookupLive(live.Object, l.path, secret)
		k := keyOf(ref)
		if d.opts.Flaps != nil && d.opts.Flaps.Flapping(ref, l.str) {
			ff := f
			ff.Class = Flapping
			// The culprit is the other side of the fight, whoever owns
			// the field right now, so the finding's Key stays the same.
			ff.Culprit = ""
			for _, m := range d.opts.Flaps.Owners(ref, l.str) {
				if !d.isSyncd(m) && !d.isHandoff(m) {
					ff.Culprit = m
					break
				}
			}
			add(ff, l.path)
		}
		if y, ok := d.yielded[k][l.str]; ok {
			f.Class = Yielded
			if f.Culprit == "" {
				f.Culprit = string(y.Manager)
			}
			add(f, l.path)
			reported[l.str] = true
			continue
		}
		syncdOwns, handoffOwns := false, false
		for _, o := range f.Owners {
			syncdOwns = syncdOwns || d.isSyncd(o.Manager)
			handoffOwns = handoffOwns || d.isHandoff(o.Manager)
		}
		yieldTo := ""
		if !syncdOwns && !handoffOwns {
			yieldTo = d.yieldedTo(ref, f.Owners, l.path)
		}
		switch {
		case !syncdOwns && handoffOwns:
			f.Class = HandoffPending
		case yieldTo != "":
			// The conflict policy gives the field to this manager: the
			// applier yields it rather than take it back.
			f.Class = Yielded
			f.Culprit = yieldTo
		case !syncdOwns:
			f.Class = TakenOver
		case f.Culprit != "":
			if isKeyLeaf(l.path) {
				continue
			}
			f.Class = Shared
		case !d.sameValue(ref, l.manager, l.path, f.Desired, f.Live):
			f.Class = ValueDrift
		default:
			continue
		}
		reported[l.str] = true
		add(f, l.path)
	}

	// Fields held by handoff managers (they left Git, so they are not
	// among the declared leaves), and the fields the caller listed.
	extra := func(class Class, manager, path string, p fieldpath.Path) {
		if reported[path] {
			return
		}
		reported[path] = true
		f := base
		f.Class = class
		f.Path = path
		declaredBy, _ := applier.HandoffOwner(manager)
		f.DeclaredBy = string(declaredBy)
		if p != nil {
			f.Owners = owners(entries, p)
			f.Live, _ = lookupLive(live.Object, p, secret)
		}
		f.Culprit = d.culprit(f.Owners)
		if f.Culprit == "" && class == Yielded {
			f.Culprit = manager
		}
		add(f, p)
	}
	livePaths := map[string]fieldpath.Path{}
	for _, e := range entries {
		for p := range e.set.Leaves().All() {
			s := p.String()
			if _, ok := livePaths[s]; !ok {
				livePaths[s] = p.Copy()
			}
			if d.isHandoff(e.Manager) {
				extra(HandoffPending, e.Manager, s, livePaths[s])
			}
		}
	}
	for _, m := range []struct {
		class Class
		refs  map[string]FieldRef
	}{{HandoffPending, d.handoff[keyOf(ref)]}, {Yielded, d.yielded[keyOf(ref)]}} {
		paths := make([]string, 0, len(m.refs))
		for p := range m.refs {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			extra(m.class, string(m.refs[p].Manager), p, livePaths[p])
		}
	}
	return out, warns
}
