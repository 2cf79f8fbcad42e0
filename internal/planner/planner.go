package planner

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"strings"
	"sync"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/client-go/applyconfigurations"
	smdschema "sigs.k8s.io/structured-merge-diff/v6/schema"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"syncd.dev/syncd/internal/paths"
	"syncd.dev/syncd/internal/redact"
)

// Options are per-planner settings. The zero value plans offline.
type Options struct {
	// Revision is recorded in the Plan (a Git commit, or a label for
	// rendered directories).
	Revision string
	// Mapper, when set, gives each kind's scope from the cluster; a kind
	// it does not know is an error unless a CRD in the same render
	// defines it. When nil the planner uses built-in knowledge: the scope
	// of the API server's own kinds, the spec.scope of CRDs in the render,
	// and "namespaced, with a warning" for any other kind.
	Mapper meta.RESTMapper
	// Converter, when set, turns objects into typed values with the
	// cluster's schema (managedfields.NewTypeConverter over the cluster's
	// OpenAPI v3). When nil the planner uses client-go's built-in schema
	// for built-in kinds, the openAPIV3Schema of CRDs in the render for
	// their kinds, and a deduced schema (maps granular, lists atomic, with
	// a warning) for any other kind.
	Converter managedfields.TypeConverter
	// Schemas, when set (and Converter is not), types kinds unknown
	// offline (custom resources whose CRD is not in the render) with the
	// cluster's OpenAPI v3 document of their group-version, fetched only
	// for such kinds. If the cluster cannot tell, they get the deduced
	// schema with a warning saying why. Whether Converter is set or not,
	// the same document decides whether such a kind serves status as a
	// subresource (then status is stripped, as for built-in kinds); when
	// Schemas is nil or the cluster cannot tell, their status is kept.
	Schemas *ClusterSchemas
	// Substitution, when set, replaces variables in every rendered object
	// before anything else looks at it (see Substitution). Nil
	// substitutes nothing: ${NAME} stays as written.
	Substitution *Substitution
	// Chart, when set, says that the manifests are a Helm chart's render
	// and with which .Release.Namespace (Tree.ChartRelease gives it): an
	// object left without a namespace is then reported with what
	// .Release.Namespace was and which field to set. Nil: not a chart.
	Chart *ChartRelease
}

// builtinConverter is client-go's schema of the built-in kinds, decoded
// once per process from syncd's JSON copy (builtinschema.go): client-go's
// own YAML costs 0.1-0.2 s of CPU to parse, and the daemon makes a
// Planner for every reconcile of every app. The converter is read-only
// once built. Should the copy not decode (a build that broke it; its
// test fails first), client-go's is parsed instead: slower, the same
// schema.
var builtinConverter = sync.OnceValue(func() managedfields.TypeConverter {
	p, err := builtinParser()
	if err != nil {
		return applyconfigurations.NewTypeConverter(builtinScheme)
	}
	return managedfields.NewSchemeTypeConverter(builtinScheme, p)
})

// PrepareBuiltinSchema decodes the schema of the built-in kinds now,
// once per process, so that a later New finds it decoded. A one-shot
// command calls it in a goroutine as it starts: the decoding then runs
// while the source is fetched and the render child renders, instead of
// after.
func PrepareBuiltinSchema() { builtinConverter() }

// App is what the planner needs to know about one app, already parsed.
type App struct {
	// Name names the app in the Plan and in errors; it is required.
	Name string
	// Namespace is given to namespaced objects without metadata.namespace
	// (empty: such objects are an error).
	Namespace string
	// Manager is the app's default field manager: it owns every field no
	// split rule hands to another manager.
	Manager FieldManager
	// Splits hand fields to other managers, in config order (ParseSplit
	// reads one from its written form).
	Splits []Split
	// Sensitive are the app's redaction rules (nil: the built-in ones):
	// the values at the fields they hide are the plan's secrets too
	// (Plan.Sensitive masks them wherever they appear).
	Sensitive *redact.Rules
}

// Split is one split rule: the fields at Paths of objects of Kinds belong
// to Manager instead of the app's default manager.
type Split struct {
	Manager FieldManager
	// Kinds limits the rule to these kinds; empty: every kind.
	Kinds []schema.GroupKind
	// Paths are the fields the manager owns; at least one.
	Paths []paths.Pattern
}

// ParseSplit reads a split rule from its written form: kinds as "Kind" or
// "group/Kind", paths in field-path notation. Errors name the entry
// (kinds[1], paths[0]) and say how to write it.
func ParseSplit(manager string, kinds, pathList []string) (Split, error) {
	sp := Split{Manager: FieldManager(manager)}
	for j, k := range kinds {
		gk, err := parseKind(k)
		if err != nil {
			return Split{}, fmt.Errorf("kinds[%d] %q: %w", j, k, err)
		}
		sp.Kinds = append(sp.Kinds, gk)
	}
	pats, err := paths.ParseAll(pathList)
	if err != nil {
		return Split{}, err
	}
	sp.Paths = pats
	return sp, nil
}

// Planner turns the manifests of one app into a Plan. It is safe for
// concurrent use by several goroutines once built.
type Planner struct {
	app     App
	opts    Options
	manager FieldManager
	// managers lists the split managers in config order, without
	// duplicates and without the default manager.
	managers []FieldManager
	rules    []rule
	builtin  managedfields.TypeConverter
}

// rule is a split rule with its slot.
type rule struct {
	index   int // position in App.Splits
	manager FieldManager
	slot    int                       // index into the slices of an object: 1 + position in Planner.managers
	kinds   map[schema.GroupKind]bool // nil: every kind
	paths   []paths.Pattern
}

func (r rule) appliesTo(gk schema.GroupKind) bool {
	return r.kinds == nil || r.kinds[gk]
}

// maxManagerLen is the API server's limit on a field manager name.
const maxManagerLen = 128

// New checks the app's managers and split rules and returns a Planner for
// it. Errors name the app, the split rule's index and the bad value.
func New(app App, opts Options) (*Planner, error) {
	if app.Name == "" {
		return nil, errors.New("app: name is empty: give every app a name")
	}
	p := &Planner{
		app:     app,
		opts:    opts,
		manager: app.Manager,
		builtin: builtinConverter(),
	}
	if err := checkManager(p.manager); err != nil {
		return nil, fmt.Errorf("app %q: manager: %w", app.Name, err)
	}
	if opts.Substitution != nil {
		if err := opts.Substitution.check(); err != nil {
			return nil, fmt.Errorf("app %q: %w", app.Name, err)
		}
	}
	slots := map[FieldManager]int{}
	for i, s := range app.Splits {
		r, err := p.newRule(i, s, slots)
		if err != nil {
			return nil, fmt.Errorf("app %q: split[%d]%w", app.Name, i, err)
		}
		p.rules = append(p.rules, r)
	}
	return p, nil
}

// newRule checks split rule i and gives its manager a slot (a manager
// named by several rules shares one). Errors start with what follows
// "split[i]" in a message.
func (p *Planner) newRule(i int, s Split, slots map[FieldManager]int) (rule, error) {
	m := s.Manager
	if err := checkManager(m); err != nil {
		return rule{}, fmt.Errorf(": manager: %w", err)
	}
	if m == p.manager {
		return rule{}, fmt.Errorf(": manager %q is the app's default manager: a split rule must hand fields to another manager", m)
	}
	if len(s.Paths) == 0 {
		return rule{}, fmt.Errorf(" (manager %s): paths is empty: list the fields this manager owns, e.g. .spec.template.spec.containers[*].image", m)
	}
	for j, pat := range s.Paths {
		if isIdentityPattern(pat) {
			return rule{}, fmt.Errorf(": paths[%d] %q: apiVersion, kind, metadata.name and metadata.namespace identify the object and are in every slice; they cannot be split", j, pat)
		}
	}
	slot, ok := slots[m]
	if !ok {
		p.managers = append(p.managers, m)
		slot = len(p.managers)
		slots[m] = slot
	}
	r := rule{index: i, manager: m, slot: slot, paths: s.Paths}
	for _, gk := range s.Kinds {
		if r.kinds == nil {
			r.kinds = map[schema.GroupKind]bool{}
		}
		r.kinds[gk] = true
	}
	return r, nil
}

// Manager returns the app's default field manager.
func (p *Planner) Manager() FieldManager { return p.manager }

// Managers returns every field manager of the app: the default manager
// first, then split managers in config order.
func (p *Planner) Managers() []FieldManager {
	return append([]FieldManager{p.manager}, p.managers...)
}

func checkManager(m FieldManager) error {
	switch {
	case m == "":
		return errors.New("empty field manager name")
	case len(m) > maxManagerLen:
		return fmt.Errorf("field manager %q is longer than %d characters (the API server's limit)", m, maxManagerLen)
	}
	for _, r := range m {
		if r < ' ' || r == 0x7f {
			return fmt.Errorf("field manager %q holds a control character", m)
		}
	}
	return nil
}

// parseKind reads "group/Kind" or "Kind" (core group).
func parseKind(s string) (schema.GroupKind, error) {
	group, kind := "", s
	if i := strings.LastIndexByte(s, '/'); i >= 0 {
		group, kind = s[:i], s[i+1:]
	}
	if kind == "" || strings.ContainsAny(kind, ". ") || strings.Contains(group, "/") {
		return schema.GroupKind{}, errors.New(`write "group/Kind" (apps/Deployment) or "Kind" for the core group (ConfigMap)`)
	}
	if kind[0] < 'A' || kind[0] > 'Z' {
		return schema.GroupKind{}, fmt.Errorf("kind %q must start with a capital letter, as in the object's kind field", kind)
	}
	return schema.GroupKind{Group: group, Kind: kind}, nil
}

// Plan validates, defaults and splits manifests. Every problem found in
// any manifest is reported at once as ManifestErrors, and then no Plan is
// returned: nothing from a render with an error may be applied.
//
// Plan takes ownership of the manifests' objects: it defaults and strips
// them in place and the plan's Desired objects are those same maps (a
// render of 10,000 objects would otherwise be held twice while syncing).
// Pass copies to keep the rendered objects as they were.
//
// Its phases run in order: substitute variables (Options.Substitution),
// collect the render's CRDs, admit every
// manifest, split the admitted objects between managers, warn about split
// paths that matched nothing, and order the objects for applying.
func (p *Planner) Plan(ctx context.Context, manifests []Manifest) (*Plan, error) {
	run := p.newPlanRun()
	run.substitute(manifests)
	if len(run.errs) > 0 {
		return nil, run.errs
	}
	// The values are known before any check can fail with an error that
	// quotes one.
	run.plan.secrets = knownSecrets(manifests, p.app, p.opts.Substitution)
	redact.Remember(p.app.Name, run.plan.secrets)
	run.collectCRDs(manifests)
	items, err := run.admit(ctx, manifests)
	if err != nil {
		return nil, err
	}
	if len(run.errs) > 0 {
		return nil, run.errs
	}
	matched, err := run.splitObjects(ctx, items)
	if err != nil {
		return nil, err
	}
	if len(run.errs) > 0 {
		return nil, run.errs
	}
	run.warnUnmatchedPaths(matched)
	run.plan.Objects = ordered(items)
	run.plan.Decrypted = decryptedFields(run.plan.Objects)
	run.plan.Redact(nil)
	return run.plan, nil
}

// planRun is the state the phases of one Plan call share.
type planRun struct {
	p    *Planner
	plan *Plan
	errs ManifestErrors
	// crds are the CustomResourceDefinitions of the render, by the kind
	// they define.
	crds map[schema.GroupKind]*renderedCRD
	// lookup fetches cluster schemas for kinds unknown offline; nil when
	// Options.Schemas is.
	lookup *schemaLookup
	// scopes are the answers of namespaced so far, by kind: the
	// discovery mapper builds a new mapping on every call (about 6 KB),
	// and a render has thousands of objects of a few kinds.
	scopes map[schema.GroupVersionKind]scope
	// types are the types objects were typed with, by schema and type
	// name: the plan's objects of one type share one.
	types map[typeKey]*typed.ParseableType
	// fieldSets are the slices' field sets: equal ones are one.
	fieldSets sharedSets
}

// typeKey names a named type of a schema.
type typeKey struct {
	schema *smdschema.Schema
	name   string
}

// typeOf is the type tv was typed with, shared with the run's other
// objects of that type (a type that is not simply a named type of its
// schema is not shared).
func (r *planRun) typeOf(tv *typed.TypedValue) *typed.ParseableType {
	tr := tv.TypeRef()
	if tr.NamedType == nil || tr.Inlined != (smdschema.Atom{}) || tr.ElementRelationship != nil {
		return &typed.ParseableType{Schema: tv.Schema(), TypeRef: tr}
	}
	key := typeKey{schema: tv.Schema(), name: *tr.NamedType}
	if t, ok := r.types[key]; ok {
		return t
	}
	t := &typed.ParseableType{Schema: tv.Schema(), TypeRef: tr}
	r.types[key] = t
	return t
}

// scope is what namespaced answered for one kind.
type scope struct {
	namespaced bool
	warning    string
}

// planned is one admitted manifest and the object it becomes.
type planned struct {
	m   *Manifest // in the manifests Plan was given, not a copy
	obj Object
}

func (p *Planner) newPlanRun() *planRun {
	r := &planRun{
		p:      p,
		plan:   &Plan{App: p.app.Name, Revision: p.opts.Revision},
		crds:   map[schema.GroupKind]*renderedCRD{},
		scopes: map[schema.GroupVersionKind]scope{},
		types:  map[typeKey]*typed.ParseableType{},
	}
	if p.opts.Schemas != nil {
		r.lookup = &schemaLookup{c: p.opts.Schemas, done: map[schema.GroupVersion]*gvDocument{}}
	}
	return r
}

// fail records a problem with one manifest.
func (r *planRun) fail(m Manifest, obj *unstructured.Unstructured, err error) {
	r.errs = append(r.errs, &ManifestError{File: m.File, Index: m.Index, Item: m.Item, Object: describe(obj), Err: err})
}

// warn records a warning about one object.
func (r *planRun) warn(ref ObjectRef, origin, message string) {
	r.plan.Warnings = append(r.plan.Warnings, Warning{Object: ref.String() + " (" + origin + ")", Message: message})
}

// collectCRDs parses the render's CRDs first: the kinds they define may be
// used by other manifests. Two CRDs defining one kind is an error.
func (r *planRun) collectCRDs(manifests []Manifest) {
	for _, m := range manifests {
		if m.Object == nil || m.Object.GroupVersionKind().GroupKind() != crdGK {
			continue
		}
		c, err := parseCRD(m.Object)
		if err != nil {
			r.fail(m, m.Object, err)
			continue
		}
		c.origin = m.Origin()
		if prev, ok := r.crds[c.gk]; ok {
			r.fail(m, m.Object, fmt.Errorf("kind %s is also defined by the CustomResourceDefinition at %s", c.gk, prev.origin))
			continue
		}
		r.crds[c.gk] = c
	}
}

// admit sanitizes, scopes and de-duplicates every manifest, and returns
// those that pass in render order. Only a cancelled ctx is returned as an
// error; problems with manifests are recorded.
func (r *planRun) admit(ctx context.Context, manifests []Manifest) ([]planned, error) {
	items := make([]planned, 0, len(manifests))
	seen := make(map[ObjectRef]string, len(manifests))
	for i := range manifests {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if it, ok := r.admitOne(ctx, &manifests[i], seen); ok {
			items = append(items, it)
		}
	}
	return items, nil
}

// admitOne admits one manifest, or records why not. seen maps the objects
// admitted so far (without their version) to their origins.
func (r *planRun) admitOne(ctx context.Context, m *Manifest, seen map[ObjectRef]string) (planned, bool) {
	if m.Object == nil {
		r.fail(*m, nil, errors.New("no object"))
		return planned{}, false
	}
	obj := m.Object
	setBy := takeKustomizeNamespace(obj)
	warns, err := sanitize(obj)
	if err != nil {
		r.fail(*m, obj, err)
		return planned{}, false
	}
	gvk := obj.GroupVersionKind()
	namespaced, scopeWarn, err := r.scopeOf(gvk)
	if err != nil {
		r.fail(*m, obj, err)
		return planned{}, false
	}
	if scopeWarn != "" {
		warns = append(warns, scopeWarn)
	}
	nsWarn, err := r.p.placeNamespace(obj, namespaced, setBy)
	if err != nil {
		r.fail(*m, obj, err)
		return planned{}, false
	}
	if nsWarn != "" {
		warns = append(warns, nsWarn)
	}
	if w := r.stripStatus(ctx, obj); w != "" {
		warns = append(warns, w)
	}
	ref := RefOf(obj)
	key := ref
	key.Version = ""
	if prev, ok := seen[key]; ok {
		r.fail(*m, obj, fmt.Errorf("duplicate object %s: also defined at %s; keep one of them", ref, prev))
		return planned{}, false
	}
	seen[key] = m.Origin()
	for _, w := range warns {
		r.warn(ref, m.Origin(), w)
	}
	return planned{m: m, obj: Object{
		Ref:     ref,
		Stage:   m.Hook.stage(stageOf(ref.GroupKind(), namespaced)),
		Origin:  m.Origin(),
		Desired: obj,

		decrypted: m.Decrypted,
	}}, true
}

// placeNamespace gives a namespaced object without a namespace the app's,
// and refuses a namespace on a cluster-scoped object, except one the
// namespace field of the kustomization setBy set ("": none), which it
// drops and returns a warning for (see kustnamespace.go).
func (p *Planner) placeNamespace(obj *unstructured.Unstructured, namespaced bool, setBy string) (warning string, err error) {
	kind := obj.GetKind()
	if !namespaced {
		switch {
		case obj.GetNamespace() == "":
			return "", nil
		case setBy != "":
			return dropSetNamespace(obj, setBy), nil
		}
		return "", fmt.Errorf("%s is cluster-scoped but sets metadata.namespace %q: delete metadata.namespace", kind, obj.GetNamespace())
	}
	if obj.GetNamespace() != "" {
		return "", nil
	}
	if p.app.Namespace == "" {
		return "", p.noNamespaceError(kind)
	}
	obj.SetNamespace(p.app.Namespace)
	return "", nil
}

// stripStatus removes status from an object whose kind writes it through
// the status subresource (an apply would ignore it), and returns a warning
// when the removed status was not empty.
func (r *planRun) stripStatus(ctx context.Context, obj *unstructured.Unstructured) (warning string) {
	if !hasStatusSubresource(ctx, obj.GroupVersionKind(), r.crds, r.lookup) {
		return ""
	}
	st, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "status")
	if !found {
		return ""
	}
	if !isEmpty(st) {
		warning = "status is set by controllers through the status subresource and is not applied; it was removed from the apply configuration"
	}
	delete(obj.Object, "status")
	return warning
}

// splitObjects types every admitted object and splits it between
// managers, in place. It returns, per rule and path, whether the path
// matched a field of any object. Only a cancelled ctx is returned as an
// error; problems with objects are recorded.
func (r *planRun) splitObjects(ctx context.Context, items []planned) ([][]bool, error) {
	matched := newMatched(r.p.rules)
	ahead := r.splitBuiltinsAhead(ctx, items, matched)
	crdConverters := map[schema.GroupKind]managedfields.TypeConverter{}
	for i := range items {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		if ahead != nil && ahead[i].done {
			r.settle(&items[i], ahead[i])
			continue
		}
		r.splitOne(ctx, &items[i], crdConverters, matched)
	}
	return matched, nil
}

// splitOne types and splits one object, or records why it cannot be.
func (r *planRun) splitOne(ctx context.Context, it *planned, crdConverters map[schema.GroupKind]managedfields.TypeConverter, matched [][]bool) {
	tv, deduced, warn, err := r.p.toTyped(ctx, it.obj.Desired, r.crds, crdConverters, r.lookup)
	if err != nil {
		r.fail(*it.m, it.obj.Desired, err)
		return
	}
	if warn != "" {
		r.warn(it.obj.Ref, it.obj.Origin, warn)
	}
	slices, err := r.p.split(it.obj.Desired, tv, deduced, matched)
	if err != nil {
		r.fail(*it.m, it.obj.Desired, err)
		return
	}
	r.fieldSets.share(slices)
	it.obj.Slices = slices
	it.obj.typ = r.typeOf(tv)
	it.obj.deduced = deduced
}

// warnUnmatchedPaths warns about every split path that matched no field
// of any object: a typo, or a rule for kinds the render lacks.
func (r *planRun) warnUnmatchedPaths(matched [][]bool) {
	for i, rl := range r.p.rules {
		for j, ok := range matched[i] {
			if !ok {
				r.plan.Warnings = append(r.plan.Warnings, Warning{Message: fmt.Sprintf(
					"app %q: split[%d] (manager %s): path %s matches no field of any object; check the path and the rule's kinds",
					r.p.app.Name, rl.index, rl.manager, rl.paths[j])})
			}
		}
	}
}

// ordered returns the objects in apply order: by stage, then by
// reference.
func ordered(items []planned) []Object {
	sort.SliceStable(items, func(i, j int) bool {
		a, b := items[i].obj, items[j].obj
		if a.Stage != b.Stage {
			return a.Stage < b.Stage
		}
		return a.Ref.Less(b.Ref)
	})
	objs := make([]Object, len(items))
	for i, it := range items {
		objs[i] = it.obj
	}
	return objs
}

// scopeOf is namespaced, asked once per kind in a run (errors are not
// remembered: each manifest of the kind is refused with its own).
func (r *planRun) scopeOf(gvk schema.GroupVersionKind) (bool, string, error) {
	if s, ok := r.scopes[gvk]; ok {
		return s.namespaced, s.warning, nil
	}
	namespaced, warning, err := r.p.namespaced(gvk, r.crds)
	if err == nil {
		r.scopes[gvk] = scope{namespaced: namespaced, warning: warning}
	}
	return namespaced, warning, err
}

// namespaced returns whether objects of gvk are namespaced, and a warning
// when that is a guess.
func (p *Planner) namespaced(gvk schema.GroupVersionKind, crds map[schema.GroupKind]*renderedCRD) (bool, string, error) {
	gk := gvk.GroupKind()
	if c, ok := crds[gk]; ok {
		return c.namespaced, "", nil
	}
	if p.opts.Mapper != nil {
		mapping, err := p.opts.Mapper.RESTMapping(gk, gvk.Version)
		if err != nil {
			if meta.IsNoMatchError(err) {
				return false, "", fmt.Errorf("the cluster does not serve %s %s and no CustomResourceDefinition in this render defines it: install its CRD first or fix apiVersion/kind", gvk.GroupVersion(), gvk.Kind)
			}
			return false, "", fmt.Errorf("look up the scope of %s: %w", gvk, err)
		}
		return mapping.Scope.Name() == meta.RESTScopeNameNamespace, "", nil
	}
	if clusterScoped[gk] {
		return false, "", nil
	}
	if builtinKinds[gk] {
		return true, "", nil
	}
	return true, fmt.Sprintf("kind %s is not built in and no CustomResourceDefinition in this render defines it; assumed namespaced", gk), nil
}

// hasStatusSubresource reports whether status of gvk is written through
// the status subresource (and so is ignored by an apply of the object):
// for a CRD in the render, from its subresources; for a built-in kind,
// always (every built-in kind with a status serves it as a subresource);
// for any other kind, from the cluster's OpenAPI document of its
// group-version when lookup is set. When nothing can tell, false: status
// is kept, as the API server would store it for a CRD without the
// subresource.
func hasStatusSubresource(ctx context.Context, gvk schema.GroupVersionKind, crds map[schema.GroupKind]*renderedCRD, lookup *schemaLookup) bool {
	if c, ok := crds[gvk.GroupKind()]; ok {
		return c.versions[gvk.Version].statusSubresour
	}
	if builtinKinds[gvk.GroupKind()] {
		return true
	}
	if lookup == nil {
		return false
	}
	return lookup.statusSubresource(ctx, gvk)
}

// schemaMismatch is the error of an object of kind gvk that its schema
// refuses.
func schemaMismatch(gvk schema.GroupVersionKind, err error) error {
	return fmt.Errorf("does not match the schema of %s %s: %w", gvk.GroupVersion(), gvk.Kind, err)
}

// toTyped converts obj to a typed value with the best schema available.
//
// deduced is true when no schema is known and the value was typed with
// structured-merge-diff's deduced type, in which every field below the top
// level is atomic.
func (p *Planner) toTyped(ctx context.Context, obj *unstructured.Unstructured, crds map[schema.GroupKind]*renderedCRD, cache map[schema.GroupKind]managedfields.TypeConverter, lookup *schemaLookup) (tv *typed.TypedValue, deduced bool, warning string, err error) {
	gvk := obj.GroupVersionKind()
	crdConverter := func() (managedfields.TypeConverter, error) {
		c, ok := crds[gvk.GroupKind()]
		if !ok {
			return nil, nil
		}
		if v, ok := c.versions[gvk.Version]; !ok {
			return nil, fmt.Errorf("version %s is not defined by the CustomResourceDefinition at %s", gvk.Version, c.origin)
		} else if v.schema == nil {
			return nil, nil
		}
		if tc, ok := cache[c.gk]; ok {
			return tc, nil
		}
		tc, err := c.typeConverter()
		if err != nil {
			return nil, err
		}
		cache[c.gk] = tc
		return tc, nil
	}
	wrap := func(err error) error { return schemaMismatch(gvk, err) }
	if p.opts.Converter != nil {
		tv, err = p.opts.Converter.ObjectToTyped(obj)
		if err == nil {
			return tv, false, "", nil
		}
		tc, cerr := crdConverter()
		if cerr != nil || tc == nil {
			return nil, false, "", wrap(err)
		}
		tv, err = tc.ObjectToTyped(obj)
		if err != nil {
			return nil, false, "", wrap(err)
		}
		return tv, false, "", nil
	}
	if builtinScheme.Recognizes(gvk) {
		tv, err = p.builtin.ObjectToTyped(obj)
		if err != nil {
			return nil, false, "", wrap(err)
		}
		return tv, false, "", nil
	}
	if builtinKinds[gvk.GroupKind()] {
		var versions []string
		for _, v := range builtinScheme.VersionsForGroupKind(gvk.GroupKind()) {
			versions = append(versions, v.String())
		}
		return nil, false, "", fmt.Errorf("apiVersion %s is not served for %s: use one of %s", gvk.GroupVersion(), gvk.Kind, strings.Join(versions, ", "))
	}
	tc, err := crdConverter()
	if err != nil {
		return nil, false, "", err
	}
	if tc != nil {
		tv, err = tc.ObjectToTyped(obj)
		if err != nil {
			return nil, false, "", wrap(err)
		}
		return tv, false, "", nil
	}
	var clusterErr error
	if lookup != nil && gvk.GroupKind() != crdGK {
		tc, clusterErr = lookup.converter(ctx, gvk.GroupVersion())
		if tc != nil {
			if tv, err = tc.ObjectToTyped(obj); err == nil {
				return tv, false, "", nil
			}
			clusterErr = err
			if !strings.Contains(err.Error(), "no corresponding type") {
				return nil, false, "", wrap(err)
			}
		}
	}
	tv, err = managedfields.NewDeducedTypeConverter().ObjectToTyped(obj)
	if err != nil {
		return nil, false, "", wrap(err)
	}
	if gvk.GroupKind() == crdGK {
		// CRDs are never split; their offline field set is approximate
		// (documented), which is not worth a warning on every CRD.
		return tv, true, "", nil
	}
	if clusterErr != nil {
		return tv, true, fmt.Sprintf("no schema is known for this kind offline and the cluster's could not be used (%v): the object cannot be split and its field set is approximate", clusterErr), nil
	}
	return tv, true, "no schema is known for this kind offline: the object cannot be split and its field set is approximate", nil
}
