package drift

import (
	"cmp"
	"maps"
	"reflect"
	"sort"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/ownership"
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
	// Sensitive are the app's redaction rules (redact.New): the Desired
	// and Live values of the fields they hide are replaced by
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
	// Ignore are the app's ignore rules (apps[].ignore): a field finding
	// they match (taken-over, shared, value-drift, flapping) is no drift;
	// Detect lists it in Report.Ignored, the Watcher drops it.
	Ignore *ignore.Rules
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

// compare orders object keys by group, kind, namespace and name.
func (k objKey) compare(o objKey) int {
	return cmp.Or(cmp.Compare(k.Group, o.Group), cmp.Compare(k.Kind, o.Kind), cmp.Compare(k.Namespace, o.Namespace), cmp.Compare(k.Name, o.Name))
}

func keyOf(r planner.ObjectRef) objKey {
	return objKey{r.Group, r.Kind, r.Namespace, r.Name}
}

// Detect compares each object of plan with its live copy and returns the
// findings, sorted by object, path and class. A live object that is nil or
// missing from live means the object was deleted. Detect does no I/O and
// never changes its arguments.
func Detect(plan *planner.Plan, live map[planner.ObjectRef]*unstructured.Unstructured, opts Options) *Report {
	byKey := make(map[objKey]*unstructured.Unstructured, len(live))
	var liveSecrets []string // a live Secret's values: Git may have rotated them away
	names := map[string]bool{}
	for r, o := range live {
		byKey[keyOf(r)] = o
		if o != nil {
			liveSecrets = append(liveSecrets, opts.Sensitive.Collect(o.Object)...)
			redact.AddNames(names, o.Object)
		}
	}
	opts.Sensitive = opts.Sensitive.WithSecrets(redact.NewSecretsExcept(liveSecrets, names))
	d := newDetector(plan, opts)
	r := &Report{}
	unreadable := opts.Unreadable.set()
	for i := range plan.Objects {
		obj := &plan.Objects[i]
		if unreadable[keyOf(obj.Ref)] {
			r.Warnings = append(r.Warnings, opts.Unreadable.warning(obj.Ref))
			continue
		}
		res := d.check(obj, byKey[keyOf(obj.Ref)])
		r.Findings = append(r.Findings, res.findings...)
		r.Ignored = append(r.Ignored, res.ignored...)
		r.Warnings = append(r.Warnings, res.warns...)
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

// judgesLike reports whether o judges every object as d does, the fields
// each lists as yielded or held excepted (listsLike): the same app, the
// same managers (the plan's included), the same flap detector and the
// same rules. Rules are compared by value (each daemon reconcile builds
// them anew); a rule that holds something reflect.DeepEqual cannot compare
// (a func) counts as changed, which costs a recomputation, never a stale
// finding.
func (d *detector) judgesLike(o *detector) bool {
	a, b := d.opts, o.opts
	for _, opts := range []*Options{&a, &b} {
		// Compared as the detectors' sets, by identity, and per object.
		opts.Managers, opts.Flaps, opts.Yielded, opts.HandoffPending = nil, nil, nil, nil
	}
	return d.app == o.app && maps.Equal(d.managers, o.managers) && d.opts.Flaps == o.opts.Flaps && reflect.DeepEqual(a, b)
}

// listsLike reports whether o lists the same fields of the object k as
// yielded and as held by a handoff manager as d does.
func (d *detector) listsLike(o *detector, k objKey) bool {
	return maps.Equal(d.yielded[k], o.yielded[k]) && maps.Equal(d.handoff[k], o.handoff[k])
}

// isSecret reports whether ref is a core Secret, whose stringData is read
// from data.
func isSecret(ref planner.ObjectRef) bool { return redact.IsSecret(ref.GroupKind()) }

// sameValue reports whether live holds what manager declares at path:
// Git's text compared by equalDeclared, or else the server's form of it
// (storedAsDeclared). A leaf Git declares null (a chart's replicas:
// null) holds no value of Git's: whatever the server stored there, its
// default, is the same value.
func (d *detector) sameValue(ref planner.ObjectRef, manager string, path fieldpath.Path, desired, live any) bool {
	return desired == nil || equalDeclared(desired, live) || d.storedAsDeclared(ref, manager, path, live)
}

// isSyncd reports whether m is one of syncd's managers (handoff managers
// excluded).
func (d *detector) isSyncd(m string) bool { return d.managers[m] }

// isHandoff reports whether m is the handoff manager of one of syncd's
// managers.
func (d *detector) isHandoff(m string) bool {
	base, ok := ownership.HandoffOwner(m)
	return ok && d.managers[string(base)]
}

// redact hides f's values when package redact's rules hide the field at
// p (and otherwise masks the rules' secret values inside them), and records p as f.FieldPath for the outputs that redact again. p is
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
		f.Desired, f.Live = d.opts.Sensitive.Value(f.Desired), d.opts.Sensitive.Value(f.Live)
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
	// desired is Git's value there.
	desired any
}

// owners returns the entries that own the declared leaf.
func (l declared) owners(own ownership.Ownership) []Owner {
	if l.empty {
		return ownersOfItself(own, l.path)
	}
	return owners(own, l.path)
}

// declaredLeaves returns the leaf fields of obj's slices, sorted by path,
// each with the first manager that declares it, their paths kept in paths
// (nil: copied for obj alone). Key fields of list items are left out when
// the item declares another field (they are shared by construction and
// say nothing the other field does not).
func declaredLeaves(obj *planner.Object, paths declaredPaths) []declared {
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
			kept := paths.of(p, str)
			out = append(out, declared{path: kept.path, str: kept.str, manager: string(s.Manager), empty: emptyContainer(v), desired: v})
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].str < out[j].str })
	return out
}

// declaredPaths keeps one copy of each declared path, with its string
// form, for the objects of one plan: objects of one kind declare the same
// paths (".data.index" on every ConfigMap of an app), and the watcher
// keeps the declared leaves of every object while it follows the plan.
// Declared paths are never modified, so the objects share them.
type declaredPaths map[string]declaredPath

// declaredPath is one kept path and its string form.
type declaredPath struct {
	path fieldpath.Path
	str  string
}

// of returns the kept copy of p, whose string form is str, keeping one
// when there is none yet; a nil table keeps nothing and copies p.
func (t declaredPaths) of(p fieldpath.Path, str string) declaredPath {
	if kept, ok := t[str]; ok {
		return kept
	}
	kept := declaredPath{path: p.Copy(), str: str}
	if t != nil {
		t[str] = kept
	}
	return kept
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
			if _, isKey := ownership.KeyValue(*item[len(item)-1].Key, *p[0].FieldName); isKey {
				return
			}
		}
		other = true
	})
	return other
}

// object returns the findings of one object, and a warning for each of
// its managedFields entries that could not be decoded; none for an object
// exempt on request (its directives). obj is what Git declares of it,
// kept by the caller; live is nil for a deleted object.
func (d *detector) object(obj *declaredObject, live *liveCopy) ([]Finding, []string) {
	res := d.judge(obj, live)
	return res.findings, res.warns
}

// checked is what the detection of one object found: its findings, the
// findings the app's ignore rules set aside, and its warnings.
type checked struct {
	findings, ignored []Finding
	warns             []string
}

// check detects one object (object's work, with the ignored findings).
func (d *detector) check(obj *planner.Object, live *unstructured.Unstructured) checked {
	return d.judge(declare(obj), liveOf(live))
}

// judge is check with what Git declares of the object and the live copy's
// ownership given.
func (d *detector) judge(obj *declaredObject, live *liveCopy) checked {
	if exempt(obj.git, live) {
		return checked{}
	}
	base := d.baseFinding(obj)
	if live == nil {
		f := base
		f.Class = Deleted
		f.Owners = []Owner{}
		return checked{findings: []Finding{f}}
	}
	c := d.newObjectCheck(obj, live, base)
	c.unmanaged()
	for _, l := range c.leaves {
		c.declaredLeaf(l)
	}
	c.handoffFields()
	c.listedFields()
	return checked{findings: c.out, ignored: c.ignored, warns: c.warns}
}

// baseFinding is what every finding of obj shares: the app, the object and
// the manager of its first slice.
func (d *detector) baseFinding(obj *declaredObject) Finding {
	return Finding{App: d.app, Object: objectOf(obj.ref), Ref: obj.ref, DeclaredBy: obj.declaredBy}
}

// objectCheck is the detection of one live object: what its phases share
// and the findings they add.
type objectCheck struct {
	d      *detector
	ref    planner.ObjectRef
	live   *liveCopy
	base   Finding
	own    ownership.Ownership
	warns  []string
	secret bool
	leaves []declared
	// present is set when one of syncd's managers owns something on the
	// object.
	present bool
	out     []Finding
	// ignored are the findings the app's ignore rules set aside.
	ignored []Finding
	// reported are the paths that have a finding other than Flapping.
	reported map[string]bool
}

func (d *detector) newObjectCheck(obj *declaredObject, live *liveCopy, base Finding) *objectCheck {
	c := &objectCheck{d: d, ref: obj.ref, live: live, base: base,
		secret: isSecret(obj.ref), leaves: obj.leaves, reported: map[string]bool{}}
	c.own = live.own
	c.warns = notCheckedWarnings(c.ref, c.own)
	for _, e := range c.own.Entries {
		if d.isSyncd(e.Manager) {
			c.present = true
		}
	}
	return c
}

// add completes f (owners, whether the values differ, redaction) and adds
// it to the object's findings.
func (c *objectCheck) add(f Finding, p fieldpath.Path) {
	if f.Owners == nil {
		f.Owners = []Owner{}
	}
	f.Differs = !c.d.sameValue(c.ref, f.DeclaredBy, p, f.Desired, f.Live)
	c.d.redact(&f, p)
	if c.d.ignored(f, p) {
		f.Ignored = true
		c.ignored = append(c.ignored, f)
		return
	}
	c.out = append(c.out, f)
}

// ignored reports whether the app's ignore rules set the field finding f
// (at p) aside: a drift class on a field, matched with the managers
// other than syncd's that own the field.
func (d *detector) ignored(f Finding, p fieldpath.Path) bool {
	if p == nil || !f.Class.IsDrift() || d.opts.Ignore == nil {
		return false
	}
	var others []string
	for _, o := range f.Owners {
		if !d.isSyncd(o.Manager) && !d.isHandoff(o.Manager) {
			others = append(others, o.Manager)
		}
	}
	return d.opts.Ignore.Ignores(f.Ref, p, others)
}

// unexplained reports whether the declared leaf l is owned by nobody while
// no syncd manager is on the object, and its value is still there: it is
// folded into the Unmanaged finding.
func (c *objectCheck) unexplained(l declared) bool {
	if c.present || len(l.owners(c.own)) > 0 {
		return false
	}
	_, ok := c.live.lookup(l.path, c.secret)
	return ok
}

// unmanaged adds the Unmanaged finding: syncd's managers are all gone from
// the object and take-overs do not explain it (managedFields were wiped,
// or the object was never applied by syncd). A field owned by nobody whose
// value is still there is then folded into the object-level finding.
func (c *objectCheck) unmanaged() {
	if c.present || len(c.leaves) == 0 {
		return
	}
	emit := len(c.own.Entries) == 0
	for _, l := range c.leaves {
		emit = emit || c.unexplained(l)
	}
	if !emit {
		return
	}
	f := c.base
	f.Class = Unmanaged
	f.Owners = ownersOfEntries(c.own.Entries)
	sortOwners(f.Owners)
	f.Culprit = c.d.culprit(f.Owners)
	c.add(f, nil)
}

// declaredLeaf adds the findings of one field Git declares: Flapping when
// the flap detector says so, and the class classify gives it.
func (c *objectCheck) declaredLeaf(l declared) {
	if c.unexplained(l) {
		return
	}
	f := c.base
	f.Path = l.str
	f.DeclaredBy = l.manager
	f.Owners = l.owners(c.own)
	if l.empty && len(f.Owners) == 0 {
		// Nobody owns the empty map or list itself: keys were put
		// in it (by the applier, a controller), which Git's {} or
		// [] does not contradict, and they have owners of their own.
		return
	}
	f.Culprit = c.d.culprit(f.Owners)
	f.Desired = l.desired
	f.Live, _ = c.live.lookup(l.path, c.secret)
	if ff, ok := c.d.flapping(f); ok {
		c.add(ff, l.path)
	}
	if c.otherInventoryLabel(l, f) {
		return
	}
	class, culprit, ok := c.d.classify(l, f)
	if !ok {
		return
	}
	f.Class, f.Culprit = class, culprit
	if class == Shared {
		if app := c.overlapsWith(l, f); app != "" {
			f.Class, f.OtherApp = Overlap, app
		}
	}
	c.reported[l.str] = true
	c.add(f, l.path)
}

// partOfLabel is the path of the inventory's part-of label.
var partOfLabel = ".metadata.labels." + inventory.LabelPartOf

// otherInventoryLabel reports whether l is the part-of label and another
// syncd app owns it alone (by Apply, its managers annotation naming the
// manager): the object is a member of that app's inventory, and the
// applier leaves the label to it on purpose (applier.Change.
// OtherInventory), so it is no finding.
func (c *objectCheck) otherInventoryLabel(l declared, f Finding) bool {
	return l.str == partOfLabel && c.d.otherAppsOwn(c.live.annotations(), f.Owners)
}

// otherAppsOwn reports whether owners is not empty and each owner is a
// manager another syncd app applies as (Apply on the main resource, named
// by that app's managers annotation among the live object's annotations).
func (d *detector) otherAppsOwn(annotations map[string]string, owners []Owner) bool {
	if len(owners) == 0 {
		return false
	}
	for _, o := range owners {
		if d.isSyncd(o.Manager) || o.Operation != string(metav1.ManagedFieldsOperationApply) || o.Subresource != "" ||
			applier.DeclaringAppIn(annotations, d.app, o.Manager) == "" {
			return false
		}
	}
	return true
}

// overlapsWith returns the other syncd app that declares the shared
// field l with the value Git declares here, or "": every owner that is
// not one of this app's managers must own it by Apply on the main
// resource as a manager another app's managers annotation lists (a
// controller or a person sharing the field makes it Shared), and the
// live value must be Git's. With several such apps it names the first
// by name.
func (c *objectCheck) overlapsWith(l declared, f Finding) string {
	if !c.d.sameValue(f.Ref, l.manager, l.path, f.Desired, f.Live) {
		return ""
	}
	first := ""
	for _, o := range f.Owners {
		if c.d.isSyncd(o.Manager) || c.d.isHandoff(o.Manager) {
			continue
		}
		app := ""
		if o.Operation == string(metav1.ManagedFieldsOperationApply) && o.Subresource == "" {
			app = applier.DeclaringAppIn(c.live.annotations(), c.d.app, o.Manager)
		}
		if app == "" {
			return ""
		}
		if first == "" || app < first {
			first = app
		}
	}
	return first
}

// flapping returns the Flapping finding of the declared field f, when the
// flap detector reports it as flapping. Its culprit is the other side of
// the fight, whoever owns the field right now, so the finding's Key stays
// the same.
func (d *detector) flapping(f Finding) (Finding, bool) {
	if d.opts.Flaps == nil || !d.opts.Flaps.Flapping(f.Ref, f.Path) {
		return Finding{}, false
	}
	f.Class = Flapping
	f.Culprit = ""
	for _, m := range d.opts.Flaps.Owners(f.Ref, f.Path) {
		if !d.isSyncd(m) && !d.isHandoff(m) {
			f.Culprit = m
			break
		}
	}
	return f, true
}

// classify decides the class and culprit of the declared leaf l, whose
// finding f has its owners, culprit and values; ok is false when l is not
// a finding (syncd owns it with Git's value, or it is a key field shared
// with another manager).
func (d *detector) classify(l declared, f Finding) (class Class, culprit string, ok bool) {
	if y, listed := d.yielded[keyOf(f.Ref)][l.str]; listed {
		if f.Culprit == "" {
			return Yielded, string(y.Manager), true
		}
		return Yielded, f.Culprit, true
	}
	syncdOwns, handoffOwns := false, false
	for _, o := range f.Owners {
		syncdOwns = syncdOwns || d.isSyncd(o.Manager)
		handoffOwns = handoffOwns || d.isHandoff(o.Manager)
	}
	if !syncdOwns {
		if handoffOwns {
			return HandoffPending, f.Culprit, true
		}
		if to := d.yieldedTo(f.Ref, f.Owners, l.path); to != "" {
			// The conflict policy gives the field to this manager: the
			// applier yields it rather than take it back.
			return Yielded, to, true
		}
		return TakenOver, f.Culprit, true
	}
	switch {
	case f.Culprit != "":
		if isKeyLeaf(l.path) {
			return "", "", false
		}
		return Shared, f.Culprit, true
	case !d.sameValue(f.Ref, l.manager, l.path, f.Desired, f.Live):
		return ValueDrift, f.Culprit, true
	default:
		return "", "", false
	}
}

// extra adds a finding of class for a field that is not among the declared
// leaves, once per path: held by the handoff manager of one of syncd's
// managers, or listed by the caller as yielded to or held by manager. p is
// nil when the field is not on the live object.
func (c *objectCheck) extra(class Class, manager, path string, p fieldpath.Path) {
	if c.reported[path] {
		return
	}
	c.reported[path] = true
	f := c.base
	f.Class = class
	f.Path = path
	declaredBy, _ := ownership.HandoffOwner(manager)
	f.DeclaredBy = string(declaredBy)
	if p != nil {
		f.Owners = owners(c.own, p)
		f.Live, _ = c.live.lookup(p, c.secret)
	}
	f.Culprit = c.d.culprit(f.Owners)
	if f.Culprit == "" && class == Yielded {
		f.Culprit = manager
	}
	c.add(f, p)
}

// handoffFields adds the fields held by handoff managers: they left Git,
// so they are not among the declared leaves.
func (c *objectCheck) handoffFields() {
	for _, e := range c.own.Entries {
		if !c.d.isHandoff(e.Manager) {
			continue
		}
		for p := range e.Set.Leaves().All() {
			c.extra(HandoffPending, e.Manager, p.String(), p.Copy())
		}
	}
}

// listedFields adds the fields the caller listed as HandoffPending or
// Yielded (Options), in path order.
func (c *objectCheck) listedFields() {
	handoff, yielded := c.d.handoff[keyOf(c.ref)], c.d.yielded[keyOf(c.ref)]
	if len(handoff) == 0 && len(yielded) == 0 {
		return // the usual case: nothing listed, no need for the live paths
	}
	live := c.livePaths()
	for _, m := range []struct {
		class Class
		refs  map[string]FieldRef
	}{{HandoffPending, handoff}, {Yielded, yielded}} {
		paths := make([]string, 0, len(m.refs))
		for p := range m.refs {
			paths = append(paths, p)
		}
		sort.Strings(paths)
		for _, p := range paths {
			c.extra(m.class, string(m.refs[p].Manager), p, live[p])
		}
	}
}

// livePaths returns every leaf some manager owns on the object, by its
// string form.
func (c *objectCheck) livePaths() map[string]fieldpath.Path {
	out := map[string]fieldpath.Path{}
	for _, e := range c.own.Entries {
		for p := range e.Set.Leaves().All() {
			if _, ok := out[p.String()]; !ok {
				out[p.String()] = p.Copy()
			}
		}
	}
	return out
}
