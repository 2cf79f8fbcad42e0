package preview

import (
	"fmt"
	"runtime"
	"sort"
	"strings"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// Action is what applying the plan would do to one object.
type Action string

// Actions an Object can report.
const (
	Create    Action = "create"
	Update    Action = "update"
	Unchanged Action = "unchanged"
	Recreate  Action = "recreate"
	// Error means the dry run was refused for a reason other than a field
	// conflict (an immutable field, admission, RBAC); Object.Error says
	// why.
	Error Action = "error"
	// Prune: the object left Git and the prune after the apply would
	// delete it.
	Prune Action = "prune"
	// Orphan: the object left Git and was adopted (it existed before
	// syncd applied it): prune would leave it in the cluster without the
	// app's label and managers.
	Orphan Action = "orphan"
	// Spared: the object left Git but a prune guard keeps it; Object.Guard
	// says which and why.
	Spared Action = "spared"
	// Skip: the object asks to be left alone (reconcile: disabled, ssa:
	// Ignore, or ssa: IfNotPresent and it exists); nothing would be sent.
	// Object.Skipped says why.
	Skip Action = "skip"
	// Keep: the object left Git and its live copy says prune: disabled
	// (or reconcile: disabled): the prune drops it from the inventory and
	// leaves it in the cluster as it is. Object.Skipped names the
	// directive.
	Keep Action = "keep"
)

// Guard is a prune guard's verdict: its reason (the reason label of
// syncd_prune_blocked_total, e.g. budget, protected) and the message the
// daemon would log.
type Guard struct {
	Reason  string `json:"reason"`
	Message string `json:"message"`
}

// PruneOutcome is what the prune after the apply would do as a whole.
type PruneOutcome struct {
	// Refused is set when a guard refuses the whole prune; the objects
	// that left Git are then all Spared with the same guard.
	Refused *Guard `json:"refused,omitempty"`
}

// Outcomes of a conflict under the app's policy: the applier's conflict
// actions, which the report names as they are.
const (
	OutcomeFail  = applier.ConflictFail
	OutcomeForce = applier.ConflictForce
	OutcomeYield = applier.ConflictYield
)

// Report is the preview of one app.
type Report struct {
	App      string   `json:"app"`
	Revision string   `json:"revision"`
	Summary  Summary  `json:"summary"`
	Objects  []Object `json:"objects"`
	// Notes say how the preview was made when that matters to the reader
	// (the inventory could not be read, so every object was dry-run).
	Notes []string `json:"notes,omitempty"`
	// Prune is set when the inventory was read: what the prune after the
	// apply would do as a whole. The objects it would remove or spare are
	// in Objects, after the plan's.
	Prune *PruneOutcome `json:"prune,omitempty"`
}

// Summary counts objects by action, and conflicts and handoffs over all
// objects.
type Summary struct {
	Create    int `json:"create"`
	Update    int `json:"update"`
	Unchanged int `json:"unchanged"`
	Recreate  int `json:"recreate,omitempty"`
	Errors    int `json:"errors,omitempty"`
	Conflicts int `json:"conflicts"`
	Handoffs  int `json:"handoffs"`
	// NotDryRun counts the unchanged objects that were not dry-run
	// because they are exactly as syncd last applied them; they are part
	// of Unchanged.
	NotDryRun int `json:"notDryRun,omitempty"`
	// Prune, Orphan and Spared count the objects that left Git by what
	// the prune would do with them.
	Prune  int `json:"prune,omitempty"`
	Orphan int `json:"orphan,omitempty"`
	Spared int `json:"spared,omitempty"`
	// Skip counts the plan's objects left alone on request; Keep the
	// objects that left Git and that prune keeps on request.
	Skip int `json:"skip,omitempty"`
	Keep int `json:"keep,omitempty"`
	// OnlyIgnored counts the updates (part of Update) that differ only in
	// fields the app's ignore rules match (Object.OnlyIgnored).
	OnlyIgnored int `json:"onlyIgnored,omitempty"`
}

// Ref names an object in the JSON report.
type Ref struct {
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	Namespace  string `json:"namespace,omitempty"`
	Name       string `json:"name"`
}

// String returns "Kind ns/name" ("Kind name" when cluster-scoped).
func (r Ref) String() string { return planner.KindName(r.Kind, r.Namespace, r.Name) }

// Conflict is a field another manager owns with a different value, and
// what the app's policy does about it.
type Conflict struct {
	Path    string `json:"path"`
	Manager string `json:"manager"`
	// Outcome is fail (the object is not applied), force (syncd takes the
	// field) or yield (the field stays with Manager).
	Outcome applier.ConflictAction `json:"outcome"`
}

// Handoff is a field the app stops setting that the API server would
// reset to a default rather than delete; syncd holds it at its live value
// under the handoff manager until another manager owns it.
type Handoff struct {
	Path string `json:"path"`
}

// Move is a field whose owner changes: From gives it up, To takes it.
type Move struct {
	Path string `json:"path"`
	From string `json:"from"`
	To   string `json:"to"`
}

// Object is the preview of one object.
type Object struct {
	Object Ref    `json:"object"`
	Action Action `json:"action"`
	// Diff is a unified diff of the live object against the dry-run
	// result, as YAML; empty when unchanged.
	Diff      string     `json:"diff"`
	Conflicts []Conflict `json:"conflicts"`
	Handoffs  []Handoff  `json:"handoffs"`
	Ownership []Move     `json:"ownership"`
	// Error is set for Action error.
	Error string `json:"error,omitempty"`
	// NotDryRun is true for an unchanged object that was not dry-run:
	// the inventory records its slices and its live resourceVersion as
	// they are now.
	NotDryRun bool `json:"notDryRun,omitempty"`
	// Guard is set for Action spared: the prune guard that keeps it.
	Guard *Guard `json:"guard,omitempty"`
	// Skipped says why, for Actions skip and keep: the directive, as the
	// object carries it.
	Skipped string `json:"skipped,omitempty"`
	// Ignored are the fields of the diff an ignore rule of the app
	// matches (apps[].ignore): the diff shows Git's value, but the apply
	// keeps the live one.
	Ignored []string `json:"ignored,omitempty"`
	// OnlyIgnored is true for an update whose only differences are
	// Ignored fields: the apply keeps their live values and changes
	// nothing, so it does not count for Report.Changed.
	OnlyIgnored bool `json:"onlyIgnored,omitempty"`
}

// Options tune Build.
type Options struct {
	// NotDryRun reports, for a plan object, that it was not dry-run
	// because it is exactly as syncd last applied it (its slices' hashes
	// and its live resourceVersion are those the inventory recorded). Its
	// preview needs only Object; it is reported as unchanged, without a
	// diff. Nil: every object was dry-run.
	NotDryRun func(*planner.Object) bool
	// Notes are copied to Report.Notes.
	Notes []string
	// Sensitive are the app's redaction rules (redact.ForApp): the diffs
	// show the values they hide as redact.Marker. Nil applies the
	// built-in rules, which always apply.
	Sensitive *redact.Rules
	// Ignore are the app's ignore rules: the fields of a diff they match
	// are listed in Object.Ignored. Nil marks nothing.
	Ignore *ignore.Rules
}

// Blocked reports whether any conflict would stop the apply.
func (r *Report) Blocked() bool {
	for _, o := range r.Objects {
		for _, c := range o.Conflicts {
			if c.Outcome == OutcomeFail {
				return true
			}
		}
	}
	return false
}

// PruneBlocked reports whether a prune guard stops part of what the
// change means to do: the whole prune refused (budget, empty render), or
// an object that left Git kept (protected kind, not owned or labelled any
// more). A prune disabled by the app's config, or refused because the
// apply itself is blocked, does not count: the first is intended, the
// second is reported as the conflict or error that blocks the apply.
func (r *Report) PruneBlocked() bool {
	for _, o := range r.Objects {
		if o.Action == Spared && o.Guard != nil && pruneBlocking(o.Guard.Reason) {
			return true
		}
	}
	return false
}

func pruneBlocking(reason string) bool {
	switch inventory.Reason(reason) {
	case inventory.ReasonDisabled, inventory.ReasonApplyIncomplete:
		return false
	}
	return true
}

// liveSecrets are the values the live objects hold at hidden fields (a
// live Secret's data): a value Git has just rotated away is no longer
// one of the plan's secrets, yet the live side of a diff still shows
// where it was embedded (a URL built from the old password).
func liveSecrets(rules *redact.Rules, previews []applier.ObjectPreview) *redact.Secrets {
	var values []string
	names := map[string]bool{}
	for _, p := range previews {
		if p.Live != nil {
			values = append(values, rules.Collect(p.Live.Object)...)
			redact.AddNames(names, p.Live.Object)
		}
	}
	return redact.NewSecretsExcept(values, names)
}

// Changed reports whether applying the plan would change anything. An
// update that differs only in ignored fields changes nothing
// (Object.OnlyIgnored).
func (r *Report) Changed() bool {
	s := r.Summary
	return s.Create+s.Update-s.OnlyIgnored+s.Recreate+s.Prune+s.Orphan > 0
}

// Build makes the report of an app's dry run from applier.Preview's
// results, in plan order, with the objects opts.NotDryRun names reported
// unchanged.
func Build(app, revision string, previews []applier.ObjectPreview, opts Options) (*Report, error) {
	r := &Report{App: app, Revision: revision, Objects: []Object{}, Notes: opts.Notes}
	opts.Sensitive = opts.Sensitive.WithSecrets(liveSecrets(opts.Sensitive, previews))
	newNS := map[string]bool{}
	newKinds := map[schema.GroupKind]bool{}
	for _, p := range previews {
		ref := p.Object.Ref
		if ref.Group == "" && ref.Kind == "Namespace" && p.Live == nil && p.After != nil {
			newNS[ref.Name] = true
		}
		if ref.Group == "apiextensions.k8s.io" && ref.Kind == "CustomResourceDefinition" && p.After != nil && p.Object.Desired != nil {
			group, _, _ := unstructured.NestedString(p.Object.Desired.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(p.Object.Desired.Object, "spec", "names", "kind")
			newKinds[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	// Objects are built in parallel: a diff is CPU only (two YAML
	// encodings and a line diff), and a plan may change thousands.
	objs := make([]Object, len(previews))
	g := new(errgroup.Group)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, p := range previews {
		if opts.NotDryRun != nil && opts.NotDryRun(p.Object) {
			objs[i] = Object{Object: refOf(p.Object.Ref), Action: Unchanged,
				Conflicts: []Conflict{}, Handoffs: []Handoff{}, Ownership: []Move{}, NotDryRun: true}
			continue
		}
		g.Go(func() error {
			switch {
			case newNS[p.Object.Ref.Namespace] && inMissingNamespace(p):
				p = fromGit(p)
			case newKinds[p.Object.Ref.GroupKind()] && ofMissingKind(p):
				// Its CRD is created (or changed) by the same plan: the
				// API server cannot dry-run it before the CRD exists.
				p = fromGit(p)
			}
			var err error
			objs[i], err = buildObject(app, p, opts.Sensitive)
			ignored := ignoredFields(p, opts.Ignore)
			for _, fp := range ignored {
				objs[i].Ignored = append(objs[i].Ignored, fp.String())
			}
			objs[i].OnlyIgnored = err == nil && onlyIgnored(objs[i], p, ignored)
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	for _, o := range objs {
		switch o.Action {
		case Create:
			r.Summary.Create++
		case Update:
			r.Summary.Update++
			if o.OnlyIgnored {
				r.Summary.OnlyIgnored++
			}
		case Unchanged:
			r.Summary.Unchanged++
		case Recreate:
			r.Summary.Recreate++
		case Error:
			r.Summary.Errors++
		case Skip:
			r.Summary.Skip++
		}
		if o.NotDryRun {
			r.Summary.NotDryRun++
		}
		r.Summary.Conflicts += len(o.Conflicts)
		r.Summary.Handoffs += len(o.Handoffs)
	}
	r.Objects = objs
	return r, nil
}

// AddPrune adds inventory.PreviewPrune's verdict for the plan: the
// objects that left Git, after the plan's, with what the prune would do to
// each, and the guard that refuses the whole prune if any. A report
// without it says nothing about prune (the inventory was not read).
func (r *Report) AddPrune(rep *inventory.Report) {
	r.Prune = &PruneOutcome{}
	if rep.Refused != nil {
		r.Prune.Refused = &Guard{Reason: string(rep.Refused.Reason), Message: rep.Refused.Message}
	}
	add := func(refs []planner.ObjectRef, a Action) {
		for _, ref := range refs {
			r.Objects = append(r.Objects, Object{Object: refOf(ref), Action: a,
				Conflicts: []Conflict{}, Handoffs: []Handoff{}, Ownership: []Move{}})
		}
	}
	add(rep.Deleted, Prune)
	add(rep.Orphaned, Orphan)
	for _, k := range rep.Kept {
		r.Objects = append(r.Objects, Object{Object: refOf(k.Object), Action: Keep,
			Conflicts: []Conflict{}, Handoffs: []Handoff{}, Ownership: []Move{}, Skipped: k.Directive.String()})
		r.Summary.Keep++
	}
	r.Summary.Prune += len(rep.Deleted)
	r.Summary.Orphan += len(rep.Orphaned)
	for _, sp := range rep.Spared {
		r.Objects = append(r.Objects, Object{Object: refOf(sp.Object), Action: Spared,
			Conflicts: []Conflict{}, Handoffs: []Handoff{}, Ownership: []Move{},
			Guard: &Guard{Reason: string(sp.Reason), Message: sp.Message}})
		r.Summary.Spared++
	}
}

func refOf(ref planner.ObjectRef) Ref {
	return Ref{APIVersion: ref.GVK().GroupVersion().String(), Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

func buildObject(app string, p applier.ObjectPreview, sensitive *redact.Rules) (Object, error) {
	o := Object{Object: refOf(p.Object.Ref), Conflicts: []Conflict{}, Handoffs: []Handoff{}, Ownership: []Move{}}
	if s := skipOf(p.Changes); s != nil {
		o.Action, o.Skipped = Skip, s.String()
		return o, nil
	}
	var errs []string
	changed := false
	for _, c := range p.Changes {
		res := c.Resolution()
		for _, x := range c.Conflicts {
			o.Conflicts = append(o.Conflicts, Conflict{Path: x.Path, Manager: x.Manager, Outcome: OutcomeFail})
		}
		for _, x := range res.Forced {
			o.Conflicts = append(o.Conflicts, Conflict{Path: x.Path, Manager: x.Manager, Outcome: OutcomeForce})
			o.Ownership = append(o.Ownership, Move{Path: x.Path, From: x.Manager, To: string(c.Manager)})
		}
		for _, x := range res.Yielded {
			o.Conflicts = append(o.Conflicts, Conflict{Path: x.Path, Manager: x.Manager, Outcome: OutcomeYield})
		}
		for _, x := range res.SameValue {
			// Not a conflict: the value stays, only the owner changes.
			o.Ownership = append(o.Ownership, Move{Path: x.Path, From: x.Manager, To: string(c.Manager)})
		}
		for _, x := range c.Moved {
			// Taken over from a legacy manager (client-side apply,
			// apps[].migrate): the value stays, only the owner changes.
			o.Ownership = append(o.Ownership, Move{Path: x.Path, From: x.From, To: x.To})
		}
		for _, h := range res.Held {
			o.Handoffs = append(o.Handoffs, Handoff{Path: h})
			o.Ownership = append(o.Ownership, Move{Path: h, From: string(c.Manager), To: string(ownership.HandoffManager(c.Manager))})
		}
		switch c.Action {
		case applier.Failed:
			if c.Err != nil {
				errs = append(errs, redact.Error(c.Err))
			}
		case applier.Unchanged, applier.Skipped:
		default:
			changed = true
		}
	}
	moves, err := internalMoves(app, p)
	if err != nil {
		return o, err
	}
	o.Ownership = append(o.Ownership, moves...)
	sortUnique(&o.Ownership)
	sort.SliceStable(o.Conflicts, func(i, j int) bool { return o.Conflicts[i].Path < o.Conflicts[j].Path })

	dopts := DiffOptions{Sensitive: sensitive}
	if sensitive != nil {
		dopts.Declared = &fieldpath.Set{}
		for _, sl := range p.Object.Slices {
			if sl.Fields != nil {
				dopts.Declared = dopts.Declared.Union(sl.Fields)
			}
		}
	}
	diff, err := DiffWith(p.Live, p.After, dopts)
	if err != nil {
		return o, fmt.Errorf("%s: %w", p.Object.Ref, err)
	}
	o.Diff = diff
	switch {
	case len(errs) > 0:
		o.Action, o.Error = Error, strings.Join(errs, "; ")
	case p.AfterErr != nil && len(o.Conflicts) == 0:
		o.Action, o.Error = Error, redact.Error(p.AfterErr)
	case has(p.Changes, applier.Recreated):
		o.Action = Recreate
	case p.Live == nil:
		o.Action = Create
	case changed || diff != "" || len(o.Ownership) > 0:
		o.Action = Update
	default:
		o.Action = Unchanged
	}
	return o, nil
}

// skipOf returns why the applier leaves the object alone on request, nil
// when it does not.
func skipOf(cs []applier.Change) *applier.Skip {
	for _, c := range cs {
		if c.Action == applier.Excluded {
			return c.Skip
		}
	}
	return nil
}

func has(cs []applier.Change, a applier.Action) bool {
	for _, c := range cs {
		if c.Action == a {
			return true
		}
	}
	return false
}

// internalMoves lists fields a slice's manager takes from another of the
// app's managers (a split change, a manager rename, a handoff hold taken
// back), comparing the live managedFields with the plan's slices.
func internalMoves(app string, p applier.ObjectPreview) ([]Move, error) {
	if p.Live == nil {
		return nil, nil
	}
	ours := map[string]bool{}
	for _, s := range p.Object.Slices {
		ours[string(s.Manager)] = true
		ours[string(ownership.HandoffManager(s.Manager))] = true
	}
	for _, m := range strings.Split(p.Live.GetAnnotations()[applier.ManagersAnnotationPrefix+app], ",") {
		if m = strings.TrimSpace(m); m != "" {
			ours[m] = true
			ours[string(ownership.HandoffManager(m))] = true
		}
	}
	owned, err := liveOwnership(p.Live)
	if err != nil {
		return nil, err
	}
	// What each of the app's managers will hold after the apply: a field
	// another manager keeps in its own slice is shared (the key field of
	// a list item split between managers), not moved.
	next := map[string]*fieldpath.Set{}
	for _, s := range p.Object.Slices {
		next[string(s.Manager)] = s.Fields.Leaves()
	}
	var out []Move
	for _, s := range p.Object.Slices {
		mine := owned[string(s.Manager)]
		s.Fields.Leaves().Iterate(func(fp fieldpath.Path) {
			if mine != nil && mine.Has(fp) {
				return
			}
			for _, m := range sortedKeys(owned) {
				if m == string(s.Manager) || !ours[m] || !owned[m].Has(fp) {
					continue
				}
				if keeps := next[m]; keeps != nil && keeps.Has(fp) {
					continue
				}
				out = append(out, Move{Path: fp.String(), From: m, To: string(s.Manager)})
			}
		})
	}
	return out, nil
}

// liveOwnership returns, per manager, the fields it owns on the main
// resource (Apply and Update entries together). An entry on the main
// resource that does not decode is an error: the moves would be guessed.
func liveOwnership(u *unstructured.Unstructured) (map[string]*fieldpath.Set, error) {
	own := ownership.Decode(u)
	for _, inv := range own.Invalid {
		if inv.Subresource == "" {
			return nil, fmt.Errorf("%s %s: decode managedFields of %q: %w", u.GetKind(), u.GetName(), inv.Manager, inv.Err)
		}
	}
	out := map[string]*fieldpath.Set{}
	for _, e := range own.MainResource() {
		set := e.Set
		if prev := out[e.Manager]; prev != nil {
			set = set.Union(prev)
		}
		out[e.Manager] = set
	}
	return out, nil
}

func sortedKeys(m map[string]*fieldpath.Set) []string {
	out := make([]string, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

func sortUnique(ms *[]Move) {
	s := *ms
	sort.Slice(s, func(i, j int) bool {
		if s[i].Path != s[j].Path {
			return s[i].Path < s[j].Path
		}
		if s[i].From != s[j].From {
			return s[i].From < s[j].From
		}
		return s[i].To < s[j].To
	})
	out := s[:0]
	for i, m := range s {
		if i == 0 || m != s[i-1] {
			out = append(out, m)
		}
	}
	*ms = out
}

// inMissingNamespace reports whether the object does not exist and every
// refusal of its dry run is a NotFound (its namespace does not exist yet).
func inMissingNamespace(p applier.ObjectPreview) bool {
	return refusedOnlyFor(p, apierrors.IsNotFound)
}

// ofMissingKind reports whether every refusal of the object's dry run is
// that the cluster does not serve its kind.
func ofMissingKind(p applier.ObjectPreview) bool {
	return refusedOnlyFor(p, meta.IsNoMatchError)
}

// refusedOnlyFor reports whether the object does not exist, its dry run
// was refused, and every refusal (of the object and of its slices) is
// one that reason recognises.
func refusedOnlyFor(p applier.ObjectPreview, reason func(error) bool) bool {
	if p.Live != nil || p.AfterErr == nil || !reason(p.AfterErr) {
		return false
	}
	for _, c := range p.Changes {
		if c.Action == applier.Failed && !reason(c.Err) {
			return false
		}
	}
	return true
}

// fromGit previews an object whose namespace or kind the same plan
// creates: the API server cannot dry-run it, so the object is shown as Git
// has it.
func fromGit(p applier.ObjectPreview) applier.ObjectPreview {
	p.After, p.AfterErr = p.Object.Desired, nil
	changes := make([]applier.Change, len(p.Changes))
	for i, c := range p.Changes {
		changes[i] = applier.Change{Object: c.Object, Manager: c.Manager, Action: applier.Created}
	}
	p.Changes = changes
	return p
}
