package inventory

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/metadata"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/directive"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// protectedKinds are deleted only with syncd.dev/prune: allow on the
// object: deleting them deletes data (a namespace's contents, every
// custom resource of a CRD, a volume).
var protectedKinds = sets.New(
	planner.ObjectRef{Kind: "Namespace"}.GroupKind(),
	planner.ObjectRef{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}.GroupKind(),
	planner.ObjectRef{Kind: "PersistentVolumeClaim"}.GroupKind(),
)

// candidate is a member that left Git, with what prune decided for it.
type candidate struct {
	mem    *Member
	ri     metadata.ResourceInterface
	live   *metav1.PartialObjectMetadata
	keep   directive.Directive // the directive of a pruneKeep
	action pruneAction
	spared *Spared
}

// pruneAction is what prune decided for a candidate.
type pruneAction string

// Prune actions.
const (
	// pruneSpare: the candidate stays (a guard spared it).
	pruneSpare pruneAction = ""
	// pruneDelete: the object is deleted from the cluster.
	pruneDelete pruneAction = "delete"
	// pruneOrphan: an adopted object stays in the cluster and is
	// released: the app's field managers and labels leave it.
	pruneOrphan pruneAction = "orphan"
	// pruneGone: the object was already gone from the cluster.
	pruneGone pruneAction = "gone"
	// pruneKeep: the live object says it is never pruned (prune:
	// disabled, reconcile: disabled): it leaves the inventory, untouched.
	pruneKeep pruneAction = "keep"
)

// Finish ends a reconcile after the applier ran: it prunes the members
// that left Git when every guard allows it, and writes the inventory of
// the new member set (members prune spared stay in it). cs and applyErr
// are the applier's results; cs may be nil when the applier never ran.
//
// Guards, in order: an incomplete apply (applyErr, or cs not OK) prunes
// nothing; an empty plan prunes nothing unless the app sets allowEmpty;
// prune: false deletes nothing; a prune deleting more than the budget's
// share of the app's objects is refused whole. Per object: an object no
// longer labelled as a member, or in which no manager of the app owns a
// field, or that is syncd's own (Reserved.SyncdOwn), is left alone;
// Namespaces, CRDs and PVCs need
// syncd.dev/prune: allow; adopted objects are orphaned unless the app
// says adopted: delete. Objects are removed in reverse stage order, each
// delete preconditioned on the UID and resourceVersion prune read.
func (r *Run) Finish(ctx context.Context, cs *applier.ChangeSet, applyErr error) (*Report, error) {
	r.forgetReads()
	rep := &Report{App: r.app.Name, DryRun: r.dryRun}
	// left before applied: its index of the plan is garbage before the
	// new member set and the apply's results are built.
	left := r.leftGit()
	next := &Inventory{App: r.app.Name, ID: r.id, Revision: r.prev.inv.Revision, Owner: r.owner()}
	next.Members = r.applied(cs)

	refuse := func(reason Reason, msg string) {
		rep.Refused = &Refusal{Reason: reason, Message: msg}
		r.m.metrics.blocked.WithLabelValues(string(reason)).Inc()
		for _, mem := range left {
			rep.Spared = append(rep.Spared, Spared{Object: mem.Ref(), Reason: reason, Message: msg})
		}
	}
	switch {
	case applyErr != nil || cs == nil || !cs.OK():
		cause := "some objects were not applied"
		if applyErr != nil {
			cause = applyErr.Error()
		} else if cs != nil {
			cause = fmt.Sprintf("%d conflict(s), %d failure(s), %d skipped", cs.Count(applier.Conflicted), cs.Count(applier.Failed), cs.Count(applier.Skipped))
		}
		if len(left) > 0 {
			refuse(ReasonApplyIncomplete, "not pruning: the apply did not complete ("+cause+"); pruning after a partial apply could delete what the failed objects need")
		}
	case len(left) > 0 && r.rewound != "":
		refuse(ReasonRewound, r.rewound)
	case len(r.plan.Objects) == 0 && len(left) > 0 && !r.app.AllowEmpty:
		refuse(ReasonEmptyRender, fmt.Sprintf("not pruning: the render is empty and would delete all %d objects of the app; set allowEmpty: true on app %s if that is intended", len(left), r.app.Name))
	case len(left) > 0 && !r.app.Prune:
		refuse(ReasonDisabled, fmt.Sprintf("not pruning: app %s sets prune: false; the objects stay in the inventory and are pruned once prune is enabled", r.app.Name))
	case len(left) > 0:
		changed := r.contended
		if !changed {
			var err error
			if changed, err = r.m.store.changedSince(ctx, r.app.Name, r.prev); err != nil {
				return rep, err
			}
		}
		if changed {
			refuse(ReasonInventoryChanged, fmt.Sprintf("not pruning: the inventory of app %s changed while this run applied (another writer, maybe at a newer revision); what it holds is re-read and pruned on the next run", r.app.Name))
			break
		}
		if err := r.prune(ctx, rep, left); err != nil {
			return rep, err
		}
	}
	if r.advances(rep, cs, applyErr) {
		next.Revision = r.revision
	}
	next.History = recordHistory(r.prev.inv.History, r.historyEntry(time.Now(), cs, applyErr, rep))
	// Members prune did not remove stay, with their reason.
	removed := rep.removed()
	spared := map[Key]Reason{}
	for _, s := range rep.Spared {
		spared[KeyOf(s.Object)] = s.Reason
	}
	for _, mem := range left {
		k := KeyOf(mem.Ref())
		if removed.Has(k) && !r.dryRun {
			continue
		}
		c := *mem
		c.Blocked = string(spared[k])
		next.Members = append(next.Members, &c)
	}
	if r.dryRun {
		return rep, nil
	}
	for attempt := 1; ; attempt++ {
		wrote, err := r.m.store.save(ctx, r.prev, next)
		rep.InventoryWritten = wrote
		if !errors.Is(err, errChanged) || attempt == saveAttempts {
			return rep, err
		}
		// Another writer wrote the inventory since this run read it:
		// keep every member it records, add this run's, and keep its
		// revision (it may be the newer one).
		if err := r.reread(ctx); err != nil {
			return rep, err
		}
		next = mergeInto(r.prev.inv, next)
	}
}

// leftGit returns the members of the inventory Begin read that are not
// in the plan: the objects that left Git.
func (r *Run) leftGit() []*Member {
	inPlan := make(map[Key]bool, len(r.plan.Objects))
	for i := range r.plan.Objects {
		inPlan[KeyOf(r.plan.Objects[i].Ref)] = true
	}
	var left []*Member
	for _, mem := range r.prev.inv.Members {
		if !inPlan[KeyOf(mem.Ref())] {
			left = append(left, mem)
		}
	}
	return left
}

// removed returns the members the report removes from the inventory:
// deleted, orphaned, kept on request and already gone.
func (rep *Report) removed() sets.Set[Key] {
	out := sets.New[Key]()
	for _, refs := range [][]planner.ObjectRef{rep.Deleted, rep.Orphaned, rep.Gone} {
		for _, ref := range refs {
			out.Insert(KeyOf(ref))
		}
	}
	for _, k := range rep.Kept {
		out.Insert(KeyOf(k.Object))
	}
	return out
}

// advances reports whether Finish records the run's revision as the last
// applied and pruned: the apply completed, and the prune was neither
// refused as a rewind (later runs of the rewound line stay refused) nor
// because another writer changed the inventory (its revision stays).
func (r *Run) advances(rep *Report, cs *applier.ChangeSet, applyErr error) bool {
	if r.revision == "" || applyErr != nil || cs == nil || !cs.OK() {
		return false
	}
	return rep.Refused == nil || rep.Refused.Reason != ReasonRewound && rep.Refused.Reason != ReasonInventoryChanged
}

// mergeInto returns fresh's members (as the other writer recorded them)
// plus ours' members fresh lacks, at fresh's revision: a member neither
// writer dropped on purpose is never lost.
func mergeInto(fresh, ours *Inventory) *Inventory {
	out := &Inventory{App: fresh.App, ID: fresh.ID, Revision: fresh.Revision, Owner: ours.Owner, History: ours.History}
	have := fresh.Index()
	for _, mem := range fresh.Members {
		c := *mem
		out.Members = append(out.Members, &c)
	}
	for _, mem := range ours.Members {
		if have[KeyOf(mem.Ref())] == nil {
			c := *mem
			out.Members = append(out.Members, &c)
		}
	}
	return out
}

// applyResult is what one object's changes say about its apply.
type applyResult struct {
	// ok: every slice was applied as the plan says, or as the policy
	// decided (fields yielded to another manager).
	ok bool
	rv string
	// slices holds what the changes reported per manager: a fingerprint
	// after the apply (or as read when unchanged) or a yield (in this
	// apply, or in an earlier one when found unchanged now). A slice
	// that reports neither gets no entry: a no-op sync answered without
	// reading the objects allocates nothing here, and a sync that writes
	// them one small slice each (48 bytes), not a map (336 bytes with
	// one string entry, 48 empty).
	slices []sliceResult
}

// sliceResult is what one manager's change reported (applyResult).
type sliceResult struct {
	manager string
	owned   string
	yield   *Yield
}

// add takes in one slice's change; prev is the member's record before
// the apply (nil: none) and policy the app's conflict policy digest.
func (x *applyResult) add(c applier.Change, prev *Member, policy string) {
	m := string(c.Manager)
	var yield *Yield
	switch c.Action {
	case applier.Failed, applier.Conflicted, applier.Skipped, applier.HandoffPending, applier.Excluded:
		// Handoff-pending objects are not as the plan says yet: apply
		// them again next time. Excluded ones were left alone: syncd
		// never applied what the plan says.
		x.ok = false
	case applier.Unchanged:
		// Not written: the skip found what it yielded still held.
		yield = prevYield(prev, m)
	}
	if c.ResourceVersion != "" {
		x.rv = c.ResourceVersion
	}
	if y := yieldOf(c.Resolution().YieldedTo, policy); y != nil {
		yield = y
	}
	x.note(m, c.Owned, yield)
}

// note records manager m's fingerprint and yield; an empty owned or a
// nil yield records nothing, and leaves an earlier one in place.
func (x *applyResult) note(m, owned string, yield *Yield) {
	if owned == "" && yield == nil {
		return
	}
	i := slices.IndexFunc(x.slices, func(s sliceResult) bool { return s.manager == m })
	if i < 0 {
		x.slices = append(x.slices, sliceResult{manager: m})
		i = len(x.slices) - 1
	}
	if owned != "" {
		x.slices[i].owned = owned
	}
	if yield != nil {
		x.slices[i].yield = yield
	}
}

// of returns what manager m's change reported (zero: nothing).
func (x *applyResult) of(m string) sliceResult {
	for _, s := range x.slices {
		if s.manager == m {
			return s
		}
	}
	return sliceResult{}
}

// prevYield is the yield prev records for manager m's slice, nil when
// none.
func prevYield(prev *Member, m string) *Yield {
	if prev == nil {
		return nil
	}
	for _, s := range prev.Slices {
		if s.Manager == m {
			return s.Yield
		}
	}
	return nil
}

// applied returns the plan's members after the apply: the slice hashes
// and resourceVersion of every object applied completely; objects whose
// apply failed keep no hashes, so the next run applies them again.
func (r *Run) applied(cs *applier.ChangeSet) []*Member {
	res := map[Key]*applyResult{}
	if cs != nil {
		for _, c := range cs.Changes {
			k := KeyOf(c.Object)
			x := res[k]
			if x == nil {
				x = &applyResult{ok: true}
				res[k] = x
			}
			x.add(c, r.prevIdx[k], r.app.ConflictPolicy)
		}
	}
	out := make([]*Member, 0, len(r.plan.Objects))
	for i := range r.plan.Objects {
		obj := &r.plan.Objects[i]
		k := KeyOf(obj.Ref)
		mem := &Member{
			Group: obj.Ref.Group, Version: obj.Ref.Version, Kind: obj.Ref.Kind,
			Namespace: obj.Ref.Namespace, Name: obj.Ref.Name, Stage: obj.Stage,
			Adopted: r.adopted[k],
		}
		if p := r.prevIdx[k]; p != nil {
			mem.Adopted = p.Adopted
		}
		if x := res[k]; x != nil && x.ok && x.rv != "" && !r.dryRun {
			mem.Slices, mem.ResourceVersion = ownedHashes(obj, x, r.prevIdx[k]), x.rv
		} else if p := r.prevIdx[k]; p != nil && r.dryRun {
			mem.Slices, mem.ResourceVersion = p.Slices, p.ResourceVersion
		}
		out = append(out, mem)
	}
	return out
}

// prune decides and carries out the removal of the members that left Git.
func (r *Run) prune(ctx context.Context, rep *Report, left []*Member) error {
	cands := make([]*candidate, len(left))
	for i, mem := range left {
		cands[i] = &candidate{mem: mem}
	}
	if err := r.readCandidates(ctx, cands); err != nil {
		return err
	}
	if r.refuseBudget(rep, cands) || r.refuseForbidden(ctx, rep, cands) {
		return nil
	}
	return r.removeByStage(ctx, rep, cands)
}

// readCandidates reads every candidate's metadata (managedFields, labels,
// annotations, UID, resourceVersion) and decides about it: one paginated
// LIST per resource and namespace holding many candidates, a GET for the
// others.
func (r *Run) readCandidates(ctx context.Context, cands []*candidate) error {
	groups := r.groupCandidates(cands)
	eg, ectx := errgroup.WithContext(ctx)
	eg.SetLimit(r.m.opts.Concurrency)
	for _, g := range groups.groups {
		if len(g.items) >= listThreshold {
			eg.Go(func() error {
				r.listGroup(ectx, g)
				return nil
			})
			continue
		}
		for _, c := range g.items {
			eg.Go(func() error {
				r.read(ectx, c)
				return nil
			})
		}
	}
	if err := eg.Wait(); err != nil {
		return err
	}
	return ctx.Err()
}

// groupCandidates groups the candidates by resource and namespace, in the
// order first seen. A candidate whose kind is gone is gone; one whose
// resource cannot be resolved is spared.
func (r *Run) groupCandidates(cands []*candidate) *byResource[*candidate] {
	groups := &byResource[*candidate]{}
	for _, c := range cands {
		wk, ri, err := r.resource(c.mem.Ref())
		if err != nil {
			if isNoMatch(err) {
				// Its kind is gone (CRD deleted): so is the object.
				c.action = pruneGone
				continue
			}
			c.spare(ReasonError, err.Error())
			continue
		}
		c.ri = ri
		groups.add(wk, ri, c)
	}
	return groups
}

// listGroup reads a group's candidates with one paginated LIST of the
// app's objects, and those not listed with a GET each.
func (r *Run) listGroup(ctx context.Context, g *resourceGroup[*candidate]) {
	byName := make(map[string]*candidate, len(g.items))
	for _, c := range g.items {
		byName[c.mem.Name] = c
	}
	err := listAll(ctx, g.ri, LabelPartOf+"="+r.id, func(live *metav1.PartialObjectMetadata) error {
		if c := byName[live.Name]; c != nil {
			c.live = live
			r.decide(c)
			delete(byName, c.mem.Name)
		}
		return nil
	})
	if err != nil {
		for _, c := range byName {
			c.spare(ReasonError, fmt.Sprintf("read before prune: %v", err))
		}
		return
	}
	// Not listed: gone, or no longer labelled; a GET tells.
	for _, c := range byName {
		r.read(ctx, c)
	}
}

// refuseBudget refuses the whole prune, sparing every candidate, when it
// would delete more than the prune budget's share of the app's objects.
// The budget counts deletions against the app's size before this run.
func (r *Run) refuseBudget(rep *Report, cands []*candidate) bool {
	deletes := 0
	for _, c := range cands {
		if c.action == pruneDelete {
			deletes++
		}
	}
	budget := r.app.PruneBudget
	if r.m.opts.PruneBudget != nil {
		budget = *r.m.opts.PruneBudget
	}
	total := len(r.prev.inv.Members)
	if deletes*100 <= budget*total {
		return false
	}
	msg := fmt.Sprintf("not pruning: it would delete %d of the app's %d objects (%d%%), more than the prune budget of %d%%; if that is intended, raise pruneBudget on app %s or run once with --prune-budget=%d",
		deletes, total, deletes*100/total, budget, r.app.Name, (deletes*100+total-1)/total)
	rep.Refused = &Refusal{Reason: ReasonBudget, Message: msg}
	r.m.metrics.blocked.WithLabelValues(string(ReasonBudget)).Inc()
	for _, c := range cands {
		rep.Spared = append(rep.Spared, Spared{Object: c.mem.Ref(), Reason: ReasonBudget, Message: msg})
	}
	return true
}

// removeByStage removes the candidates in reverse stage order (namespaced
// objects first, CRDs last; within a stage, concurrently) and fills the
// report, also when ctx ends between stages.
func (r *Run) removeByStage(ctx context.Context, rep *Report, cands []*candidate) error {
	slices.SortStableFunc(cands, func(a, b *candidate) int {
		if a.mem.Stage != b.mem.Stage {
			return int(b.mem.Stage) - int(a.mem.Stage)
		}
		if b.mem.Ref().Less(a.mem.Ref()) {
			return -1
		}
		if a.mem.Ref().Less(b.mem.Ref()) {
			return 1
		}
		return 0
	})
	for start := 0; start < len(cands); {
		end := start
		for end < len(cands) && cands[end].mem.Stage == cands[start].mem.Stage {
			end++
		}
		r.removeStage(ctx, cands[start:end])
		if err := ctx.Err(); err != nil {
			r.collect(rep, cands)
			return err
		}
		start = end
	}
	r.collect(rep, cands)
	return nil
}

// removeStage deletes or orphans, concurrently, the candidates of one
// stage prune decided to remove; nothing in a dry run.
func (r *Run) removeStage(ctx context.Context, stage []*candidate) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(r.m.opts.Concurrency)
	for _, c := range stage {
		if c.action != pruneDelete && c.action != pruneOrphan || r.dryRun {
			continue
		}
		g.Go(func() error {
			r.remove(gctx, c)
			return nil
		})
	}
	_ = g.Wait()
}

// read reads one candidate with a GET and decides about it.
func (r *Run) read(ctx context.Context, c *candidate) {
	live, err := c.ri.Get(ctx, c.mem.Name, metav1.GetOptions{})
	switch {
	case apierrors.IsNotFound(err):
		c.action = pruneGone
	case err != nil:
		c.spare(ReasonError, fmt.Sprintf("read before prune: %v", err))
	default:
		c.live = live
		r.decide(c)
	}
}

// collect fills the report and counts the outcomes.
func (r *Run) collect(rep *Report, cands []*candidate) {
	for _, c := range cands {
		ref := c.mem.Ref()
		switch {
		case c.spared != nil:
			rep.Spared = append(rep.Spared, *c.spared)
			r.m.metrics.blocked.WithLabelValues(string(c.spared.Reason)).Inc()
		case c.action == pruneGone:
			rep.Gone = append(rep.Gone, ref)
		case c.action == pruneDelete:
			rep.Deleted = append(rep.Deleted, ref)
			if !r.dryRun {
				r.m.metrics.pruned.WithLabelValues("deleted").Inc()
			}
		case c.action == pruneOrphan:
			rep.Orphaned = append(rep.Orphaned, ref)
			if !r.dryRun {
				r.m.metrics.pruned.WithLabelValues("orphaned").Inc()
			}
		case c.action == pruneKeep:
			rep.Kept = append(rep.Kept, Kept{Object: ref, Directive: c.keep})
			if !r.dryRun {
				r.m.metrics.pruned.WithLabelValues("kept").Inc()
			}
		}
	}
}

func (c *candidate) spare(reason Reason, msg string) {
	c.action = pruneSpare
	c.spared = &Spared{Object: c.mem.Ref(), Reason: reason, Message: msg}
}

// decide applies the per-object guards to a candidate read from the
// cluster.
func (r *Run) decide(c *candidate) {
	live := c.live
	t := Target{Ref: c.mem.Ref(), Labels: live.Labels, InstallsSyncd: r.app.InstallsSyncd}
	if d, ok := pruneDisabled(live); ok {
		// Checked first, as Flux does: the object asked never to be
		// deleted, whatever else is true of it.
		c.action, c.keep = pruneKeep, d
		return
	}
	if rule, why := r.m.opts.Reserved.SyncdOwn(t); rule != "" {
		c.spare(ReasonReserved, fmt.Sprintf("not deleted: it is syncd's own object (%s), which no app may delete whatever its RBAC allows (docs/security.md); delete it by hand if it should go", why))
		return
	}
	if other := r.declaredElsewhere(live); other != "" && r.ownsAny(live) {
		// Another app still declares the object: it is never deleted
		// by the app that dropped it. This app lets go of it instead
		// (its fields, managers annotation and, when it holds it, the
		// part-of label), as it orphans an adopted object, so the other
		// app owns it alone and takes it into its inventory.
		c.action = pruneOrphan
		return
	}
	if got := live.Labels[LabelPartOf]; got != r.id {
		c.spare(ReasonNotMember, fmt.Sprintf("not deleted: it no longer carries %s=%s (now %q), so it is no longer this app's; it is dropped from prune once relabelled or deleted by hand", LabelPartOf, r.id, got))
		return
	}
	if !r.ownsAny(live) {
		c.spare(ReasonUnowned, fmt.Sprintf("not deleted: no field manager of app %s owns any field of it any more (someone took it over); remove the %s label to release it, or delete it by hand", r.app.Name, LabelPartOf))
		return
	}
	gk := c.mem.Ref().GroupKind()
	if protectedKinds.Has(gk) && live.Annotations[PruneAnnotation] != PruneAllow {
		c.spare(ReasonProtected, fmt.Sprintf("not deleted: a %s is deleted by prune only when it carries the annotation %s: %s (deleting it deletes what it holds); add it in Git first, or delete it by hand", gk.Kind, PruneAnnotation, PruneAllow))
		return
	}
	if c.mem.Adopted && !r.app.DeleteAdopted {
		c.action = pruneOrphan
		return
	}
	c.action = pruneDelete
}

// pruneDisabled reports whether the live object says it is never to be
// pruned, and by which directive: prune: disabled, or reconcile: disabled
// (an object syncd does not reconcile is not deleted either), in syncd's
// or Flux's spelling. It is read from the cluster, as Flux reads it: the
// object has left Git.
func pruneDisabled(live *metav1.PartialObjectMetadata) (directive.Directive, bool) {
	d := directive.Of(live)
	switch {
	case d.PruneDisabled.Key != "":
		return d.PruneDisabled, true
	case d.ReconcileDisabled.Key != "":
		return d.ReconcileDisabled, true
	}
	return directive.Directive{}, false
}

// ours returns the names of the app's managers on an object: the
// configured ones, those its managers annotation lists, and their handoff
// managers.
func (r *Run) ours(live *metav1.PartialObjectMetadata) sets.Set[string] {
	set := sets.New(r.app.Managers...)
	if v := live.Annotations[applier.ManagersAnnotationPrefix+trim63(r.app.Name)]; v != "" {
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m != "" {
				set.Insert(m)
			}
		}
	}
	for _, m := range set.UnsortedList() {
		set.Insert(ownership.HandoffManager(m))
	}
	return set
}

func trim63(s string) string {
	if len(s) > 63 {
		return s[:63]
	}
	return s
}

// declaredElsewhere returns another app whose managers annotation is on
// live and one of whose managers still has a managedFields entry there:
// an app that still declares the object. "" when there is none.
func (r *Run) declaredElsewhere(live *metav1.PartialObjectMetadata) string {
	own := applier.ManagersAnnotationPrefix + trim63(r.app.Name)
	entries := sets.New[string]()
	for _, e := range live.ManagedFields {
		entries.Insert(e.Manager)
	}
	var apps []string
	for k, v := range live.Annotations {
		if !strings.HasPrefix(k, applier.ManagersAnnotationPrefix) || k == own {
			continue
		}
		for _, m := range strings.Split(v, ",") {
			if m = strings.TrimSpace(m); m != "" && entries.Has(m) {
				apps = append(apps, strings.TrimPrefix(k, applier.ManagersAnnotationPrefix))
				break
			}
		}
	}
	if len(apps) == 0 {
		return ""
	}
	return slices.Min(apps)
}

// ownsAny reports whether a manager of the app owns a field of live.
func (r *Run) ownsAny(live *metav1.PartialObjectMetadata) bool {
	ours := r.ours(live)
	for _, e := range live.ManagedFields {
		if ours.Has(e.Manager) {
			return true
		}
	}
	return false
}

// remove deletes or orphans one candidate.
func (r *Run) remove(ctx context.Context, c *candidate) {
	live := c.live
	if c.action == pruneOrphan {
		if err := r.orphan(ctx, c); err != nil {
			switch {
			case apierrors.IsConflict(err) || apierrors.IsInvalid(err):
				c.spare(ReasonChanged, fmt.Sprintf("not orphaned: it changed while being released; retried next run: %v", err))
			case apierrors.IsForbidden(err):
				c.spare(ReasonForbidden, r.forbiddenMessage("patch"))
			default:
				c.spare(ReasonError, fmt.Sprintf("orphan: %v", err))
			}
		}
		return
	}
	err := c.ri.Delete(ctx, c.mem.Name, deleteOptions(live))
	switch {
	case err == nil:
	case apierrors.IsNotFound(err):
		c.action = pruneGone
	case apierrors.IsConflict(err):
		c.spare(ReasonChanged, "not deleted: it changed after prune read it; it is checked again on the next run")
	case apierrors.IsForbidden(err):
		c.spare(ReasonForbidden, r.forbiddenMessage("delete"))
	default:
		c.spare(ReasonError, fmt.Sprintf("delete: %v", err))
	}
}

// orphan releases an adopted object: one JSON patch, preconditioned on
// the resourceVersion read, removes the part-of label, the app's managers
// annotation and the app's managedFields entries. Unlike an identity-only
// apply it changes no value: fields only syncd owned keep their values,
// owned by no one, as they were before syncd adopted the object.
func (r *Run) orphan(ctx context.Context, c *candidate) error {
	patch, err := r.orphanPatch(c.live)
	if err != nil {
		return err
	}
	_, err = c.ri.Patch(ctx, c.mem.Name, types.JSONPatchType, patch, metav1.PatchOptions{FieldManager: StoreManager})
	return err
}

// orphanPatch is the JSON patch that releases an adopted object.
func (r *Run) orphanPatch(live *metav1.PartialObjectMetadata) ([]byte, error) {
	ours := r.ours(live)
	var keep []metav1.ManagedFieldsEntry
	for _, e := range live.ManagedFields {
		if !ours.Has(e.Manager) {
			keep = append(keep, e)
		}
	}
	var mf any = keep
	if len(keep) == 0 {
		// An empty list means "unchanged" to the API server; [{}] clears.
		mf = []map[string]any{{}}
	}
	ops := []map[string]any{
		{"op": "test", "path": "/metadata/resourceVersion", "value": live.ResourceVersion},
	}
	if live.Labels[LabelPartOf] == r.id {
		// Another app's label (an object both declare) stays.
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/labels/" + escape(LabelPartOf)})
	}
	if _, ok := live.Annotations[applier.ManagersAnnotationPrefix+trim63(r.app.Name)]; ok {
		ops = append(ops, map[string]any{"op": "remove", "path": "/metadata/annotations/" + escape(applier.ManagersAnnotationPrefix+trim63(r.app.Name))})
	}
	ops = append(ops, map[string]any{"op": "replace", "path": "/metadata/managedFields", "value": mf})
	return json.Marshal(ops)
}

// escape escapes a JSON pointer token.
func escape(s string) string {
	return strings.NewReplacer("~", "~0", "/", "~1").Replace(s)
}
