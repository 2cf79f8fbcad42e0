package applier

import (
	"context"
	"errors"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/sets"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// ApplyOptions are an app's settings for one Apply call. The zero value
// fails on every conflict, holds dropped fields, never recreates and does
// not wait.
type ApplyOptions struct {
	// Policy resolves field conflicts with other managers; nil fails on
	// every conflict. Conflicts between the app's own managers (fields
	// moving after a split change or rename) are always forced.
	Policy *Policy
	// ReleaseHandoff lets fields a manager dropped go at once (app
	// handoff: release) instead of holding them until someone owns them.
	ReleaseHandoff bool
	// Recreate allows delete-and-create when the API server says a field
	// is immutable.
	Recreate bool
	// RecordManagers writes the app's managers annotation on every object
	// so a later run can migrate renamed managers. The ad-hoc
	// `syncd apply --path` leaves it off.
	RecordManagers bool
	// SkipValidation applies each object on its own (apps[].validate:
	// false): without it, the objects of a stage that will be written are
	// dry-run before its first write, and a refusal writes nothing of the
	// stage or of later ones.
	SkipValidation bool
	// Accepted, when set, is the app's record of accepted validation dry
	// runs: an object whose dry run's outcome it knows is not dry-run
	// again (accepted.go). Nil dry-runs every object that will be written.
	Accepted *Accepted
	// LocalValidation lets the validation judge a new ConfigMap without a
	// dry run when the run creates many of them and nothing in the
	// cluster but the API server's own validation could refuse one
	// (judge.go). False dry-runs every object (apps[].dryRunAll).
	LocalValidation bool
	// Wait waits, after each stage's writes, until the stage's objects are
	// kstatus Current (or Failed), up to Timeout (default 5 minutes) from
	// the end of the stage's writes, before going on to the next stage.
	Wait    bool
	Timeout time.Duration
	// Labels are added to every object's default slice (the inventory's
	// applyset.kubernetes.io/part-of label).
	Labels map[string]string
	// Live, when set, answers the per-object read from a watch cache
	// instead of a GET. It may return metadata-only objects
	// (managedFields, annotations, resourceVersion are what is needed);
	// nil with a NotFound error means absent.
	Live LiveReader
	// Skip, when set, is asked for every object that exists; true means
	// nothing about it changed since syncd last applied it (same slice
	// hashes, same live resourceVersion) and no request is sent for it.
	Skip func(obj *planner.Object, live *unstructured.Unstructured) bool
	// Migrate names the managers whose fields the app takes over
	// (apps[].migrate); nil takes over only client-side kubectl apply's
	// fields, and only those the apply does not change.
	Migrate *Migration
	// Ignore are the app's ignore rules (apps[].ignore): on an existing
	// object the fields they match are sent at their live value (left
	// out when the live object lacks them), so they are never reverted.
	// An object syncd creates gets Git's value. Nil ignores nothing.
	Ignore *ignore.Rules
	// Flapping, when set, names fields syncd must stop forcing because
	// their owner keeps flipping (ping-pong with another forcing writer);
	// such conflicts fail instead.
	Flapping func(ref planner.ObjectRef, path string) bool
	// Progress, when set, is told as each stage starts and ends and as
	// each object's requests are sent (progress.go); nil tells no one.
	Progress Progress
}

// LiveReader reads the current state of an object, typically from a watch
// cache so that unchanged objects cost no request.
type LiveReader interface {
	Live(ctx context.Context, ref planner.ObjectRef) (*unstructured.Unstructured, error)
}

// UnchangedReader is an optional interface of a LiveReader that can tell
// from its cache alone that an object is exactly as syncd left it. The
// applier asks it before reading the object, so a no-op sync of thousands
// of objects builds no live object at all; it returns the live
// resourceVersion and true to skip the object. Objects it is unsure of
// (false) go through Live and Skip as usual, and so must an object whose
// live metadata carries reconcile: disabled or ssa: Ignore (skipReason
// excludes it on the live object). It is asked when the run
// waits for health too: an unchanged object is not written, but it is
// still waited for (an object already Current ends its wait at once).
type UnchangedReader interface {
	Unchanged(ctx context.Context, obj *planner.Object) (resourceVersion string, ok bool)
}

// clientSideManagers are the managers of client-side kubectl apply and of
// objects that predate managedFields; the fields the app shares with them
// are taken over (Migration) so that fields later removed from Git do
// not linger.
var clientSideManagers = sets.New("kubectl-client-side-apply", "before-first-apply")

// lastAppliedAnnotation is client-side apply's record of the last applied
// configuration.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

// objectRun applies the objects of one plan.
type objectRun struct {
	a          *Applier
	ao         ApplyOptions
	app        string
	hpaTargets map[planner.ObjectRef]bool
	// mappings caches the REST mapping of each kind for the run (the
	// discovery mapper allocates a new mapping per call, which for
	// thousands of objects was a large share of the sync's memory). It is
	// cleared when the mapper is reset after CRDs are established.
	mappings sync.Map // schema.GroupVersionKind → *meta.RESTMapping
	// clients caches the client of each kind and namespace for the run,
	// cleared with mappings: a target holds its client until the stage
	// ends, and one of its own per object was a megabyte of a 10,000
	// object sync's heap.
	clients sync.Map // clientKey → objectClient
	// dryRunNamespaces holds the Namespaces a dry run "created": they do
	// not exist, so the API server cannot dry-run an object in them
	// (unchecked).
	dryRunNamespaces sync.Map // name → struct{}
	// local holds the facts the local judgement of new ConfigMaps reads
	// once per run (judge.go).
	local localJudge
	// validation counts the run's validations (ChangeSet.Validation).
	validation validationCounts
}

// validationCounts is a run's Validation, counted by the stage's workers.
type validationCounts struct {
	dryRuns, judged, known atomic.Int64
}

// snapshot is the counts as a Validation.
func (v *validationCounts) snapshot() Validation {
	return Validation{DryRuns: int(v.dryRuns.Load()), Judged: int(v.judged.Load()), Known: int(v.known.Load())}
}

// objectClient is the clients of one kind in one namespace: the dynamic
// client, the metadata client for requests whose answer is read for
// its metadata only (nil without Options.Metadata), and the creator of
// dry-run creates (nil unless Options.Metadata is a MetadataClient).
type objectClient struct {
	ri      dynamic.ResourceInterface
	mri     metadata.ResourceInterface
	creates *creator
}

// clientKey names the client of one kind in one namespace.
type clientKey struct {
	gvk       schema.GroupVersionKind
	namespace string
}

// resource returns the client for ref's resource, mapping each kind and
// making its client for each namespace once per run.
func (r *objectRun) resource(ref planner.ObjectRef) (objectClient, error) {
	gvk := ref.GVK()
	ck := clientKey{gvk: gvk, namespace: ref.Namespace}
	if c, ok := r.clients.Load(ck); ok {
		return c.(objectClient), nil
	}
	var m *meta.RESTMapping
	if v, ok := r.mappings.Load(gvk); ok {
		m = v.(*meta.RESTMapping)
	} else {
		var err error
		if m, err = r.a.mapping(ref); err != nil {
			return objectClient{}, err
		}
		r.mappings.Store(gvk, m)
	}
	c := objectClient{ri: r.a.client(m, ref), mri: r.a.metadataClient(m, ref), creates: r.a.creator(m, ref)}
	r.clients.Store(ck, c)
	return c, nil
}

// hpaTargets returns the workloads HorizontalPodAutoscalers in the plan
// scale (refs without version).
func hpaTargets(plan *planner.Plan) map[planner.ObjectRef]bool {
	out := map[planner.ObjectRef]bool{}
	for _, o := range plan.Objects {
		if o.Ref.Group != "autoscaling" || o.Ref.Kind != "HorizontalPodAutoscaler" {
			continue
		}
		target, _, _ := unstructured.NestedStringMap(o.Desired.Object, "spec", "scaleTargetRef")
		gv, err := schema.ParseGroupVersion(target["apiVersion"])
		if err != nil || target["kind"] == "" || target["name"] == "" {
			continue
		}
		out[planner.ObjectRef{Group: gv.Group, Kind: target["kind"], Namespace: o.Ref.Namespace, Name: target["name"]}] = true
	}
	return out
}

var replicasPath = fieldpath.MakePathOrDie("spec", "replicas")

// prepare returns the slices to send: the plan's, with the managers
// annotation on the default slice and, for a live workload an HPA scales,
// without .spec.replicas (sent only on creation).
func (r *objectRun) prepare(obj *planner.Object, exists bool) ([]planner.Slice, error) {
	out := slices.Clone(obj.Slices)
	ref := obj.Ref
	ref.Version = ""
	if exists && r.hpaTargets[ref] {
		for i, s := range out {
			if !s.Fields.Has(replicasPath) {
				continue
			}
			ns, err := obj.Reslice(s.Manager, s.Fields.RecursiveDifference(fieldpath.NewSet(replicasPath)))
			if err != nil {
				return nil, err
			}
			ns.Object = withIdentity(obj, ns.Object)
			out[i] = ns
		}
	}
	if len(out) > 0 && (r.ao.RecordManagers || len(r.ao.Labels) > 0) {
		s := out[0]
		u := s.Object.DeepCopy()
		fields := s.Fields
		if r.ao.RecordManagers {
			ann := u.GetAnnotations()
			if ann == nil {
				ann = map[string]string{}
			}
			key := managersAnnotation(r.app)
			ann[key] = managerList(obj)
			u.SetAnnotations(ann)
			fields = fields.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "annotations", key)))
		}
		if len(r.ao.Labels) > 0 {
			addLabels(u, r.ao.Labels)
			for k := range r.ao.Labels {
				fields = fields.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", "labels", k)))
			}
		}
		out[0] = planner.Slice{Manager: s.Manager, Object: u, Fields: fields, Hash: s.Hash}
	}
	return out, nil
}

// target is one object of a stage between its read and its write: the
// client of its resource, the live object (nil: it does not exist) and
// its changes so far. done is set when nothing is left to write: the
// object is unchanged, or its read failed.
type target struct {
	obj *planner.Object
	objectClient
	live    *unstructured.Unstructured
	changes []Change
	done    bool
	spent   time.Duration
}

// apply reads and writes one object and returns one Change per slice
// (Preview's path: no validation pass, no wait).
func (r *objectRun) apply(ctx context.Context, obj *planner.Object) []Change {
	t := r.read(ctx, obj)
	r.write(ctx, t)
	return t.changes
}

// read maps the object's kind and reads it, deciding whether anything is
// left to write: an object unchanged since syncd last applied it (the
// UnchangedReader's answer, or Skip on the live object) is done.
func (r *objectRun) read(ctx context.Context, obj *planner.Object) *target {
	t := r.decide(ctx, obj, appendSkipped(nil, obj))
	r.readLive(ctx, t)
	return t
}

// decide does what read does without a request: it maps the object's
// kind and settles the objects that need no read (no slices, left alone
// by Git's directives, or found unchanged by the UnchangedReader), which
// it returns done. changes are the object's Skipped changes
// (appendSkipped), which the target fills in. Stage calls it for every
// object before starting workers for the others: a no-op sync of
// thousands of objects then starts no worker, and allocates no timer,
// for any of them.
func (r *objectRun) decide(ctx context.Context, obj *planner.Object, changes []Change) *target {
	t := &target{obj: obj, changes: changes}
	if len(obj.Slices) == 0 {
		t.done = true
		return t
	}
	if s := skipBeforeRead(obj); s != nil {
		t.exclude(s)
		return t
	}
	defer t.timed(time.Now())
	c, err := r.resource(obj.Ref)
	if err != nil {
		t.fail(err)
		return t
	}
	t.objectClient = c
	if ur, ok := r.ao.Live.(UnchangedReader); ok && r.ao.Skip != nil {
		if rv, ok := ur.Unchanged(ctx, obj); ok {
			// Unchanged since syncd applied it, and no directive on the
			// live object excludes it (the UnchangedReader's contract):
			// only Git's can.
			if s := skipReason(obj, nil); s != nil {
				t.exclude(s)
				return t
			}
			t.unchanged(rv)
		}
	}
	return t
}

// readLive reads the object of a target decide left undone and decides
// whether anything is left to write: an object Skip finds unchanged since
// syncd last applied it is done.
func (r *objectRun) readLive(ctx context.Context, t *target) {
	if t.done {
		return
	}
	defer t.timed(time.Now())
	obj := t.obj
	var live *unstructured.Unstructured
	var err error
	if r.ao.Live != nil {
		live, err = r.ao.Live.Live(ctx, obj.Ref)
	} else {
		live, err = t.ri.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	}
	switch {
	case apierrors.IsNotFound(err):
	case err != nil:
		t.fail(describeError(obj.Ref, "get", err))
	case skipReason(obj, live) != nil:
		t.exclude(skipReason(obj, live))
	case r.ao.Skip != nil && r.ao.Skip(obj, live):
		t.unchanged(live.GetResourceVersion())
		t.owned(live)
	default:
		t.live = live
	}
}

// write sends the slices of an object read has left something to write
// for: a create when it does not exist, else an update.
func (r *objectRun) write(ctx context.Context, t *target) {
	if t.done {
		return
	}
	defer t.timed(time.Now())
	var final metav1.Object
	var err error
	if t.live == nil {
		final, err = r.create(ctx, t.ri, t.mri, t.obj, t.changes, Created)
	} else {
		final, err = r.update(ctx, t.objectClient, t.obj, t.live, t.changes)
	}
	t.done = true
	if err != nil && r.inDryRunNamespace(t, err) {
		t.uncheckedIn(t.obj.Ref.Namespace)
		return
	}
	if err != nil {
		t.failAt(err)
		return
	}
	r.noteDryRunNamespace(t)
	if final != nil && !r.a.opts.DryRun {
		for i := range t.changes {
			t.changes[i].ResourceVersion = final.GetResourceVersion()
		}
		t.owned(final)
	}
}

// noteDryRunNamespace records a Namespace a dry run created: it does not
// exist, and the objects of later stages in it cannot be dry-run.
func (r *objectRun) noteDryRunNamespace(t *target) {
	ref := t.obj.Ref
	if r.a.opts.DryRun && t.live == nil && ref.Group == "" && ref.Kind == "Namespace" {
		r.dryRunNamespaces.Store(ref.Name, struct{}{})
	}
}

// inDryRunNamespace reports whether err is the API server's NotFound for
// a new object of a dry run whose namespace that dry run "created".
func (r *objectRun) inDryRunNamespace(t *target, err error) bool {
	if !r.a.opts.DryRun || t.live != nil || t.obj.Ref.Namespace == "" || !apierrors.IsNotFound(err) {
		return false
	}
	_, ok := r.dryRunNamespaces.Load(t.obj.Ref.Namespace)
	return ok
}

// uncheckedIn marks a dry run's new object created but not checked by
// the API server: its namespace ns is created by the same apply.
func (t *target) uncheckedIn(ns string) {
	for i := range t.changes {
		t.changes[i].Action, t.changes[i].Err = Created, nil
		t.changes[i].resolvedRecord().Unchecked = "its namespace " + ns + " is created by this apply, so the API server cannot dry-run it before then: checked by the real apply"
	}
}

// owned records on each slice's change the fingerprint of its manager's
// managedFields entries in u (Change.Owned) and, for a slice that yielded
// fields, what the managers it yielded them to hold in u
// (Resolution.YieldedTo).
func (t *target) owned(u metav1.Object) {
	mfs := u.GetManagedFields()
	for i := range t.changes {
		c := &t.changes[i]
		c.Owned = ownership.Fingerprint(mfs, string(c.Manager))
		if c.Resolved != nil && len(c.Resolved.Yielded) > 0 {
			c.Resolved.YieldedTo = holdings(mfs, c.Resolved.Yielded)
		}
	}
}

// holdings returns what each manager of the yielded conflicts holds in
// mfs, once per manager, sorted by manager.
func holdings(mfs []metav1.ManagedFieldsEntry, yielded Conflicts) []Holding {
	managers := sets.New[string]()
	for _, c := range yielded {
		managers.Insert(c.Manager)
	}
	var out []Holding
	for _, m := range sets.List(managers) {
		out = append(out, Holding{Manager: m, Fields: ownership.Holding(mfs, m)})
	}
	return out
}

// timed adds the time since start to the object's changes' Duration.
func (t *target) timed(start time.Time) {
	t.spent += time.Since(start)
	for i := range t.changes {
		t.changes[i].Duration = t.spent
	}
}

// fail marks the object failed with err: nothing is left to write.
func (t *target) fail(err error) {
	t.changes[0].Action, t.changes[0].Err = Failed, err
	t.done = true
}

// failAt records a failure of the object's writes on the slice it
// concerns (sliceError), else on the first.
func (t *target) failAt(err error) {
	i := 0
	var se *sliceError
	if errors.As(err, &se) {
		i, err = se.slice, se.err
	}
	setFailed(&t.changes[i], err)
}

// unchanged marks every slice unchanged at resourceVersion rv.
func (t *target) unchanged(rv string) {
	for i := range t.changes {
		t.changes[i].Action, t.changes[i].ResourceVersion = Unchanged, rv
	}
	t.done = true
}

// changesOf returns the targets' changes, in order.
func changesOf(targets []*target) [][]Change {
	out := make([][]Change, len(targets))
	for i, t := range targets {
		out[i] = t.changes
	}
	return out
}

// setFailed marks a change failed with err, or conflicted when err
// carries field conflicts.
func setFailed(c *Change, err error) {
	c.Action, c.Err = Failed, err
	if cs := FieldConflicts(err); cs != nil {
		c.Action, c.Conflicts = Conflicted, cs
	}
}

// withExtras returns next with the labels and annotations that prepare
// added to s and that are not in the object's desired state (the managers
// annotation, the inventory's labels): a slice cut again from the desired
// state would lose them, and applying it would remove them from the
// object. Labels named in without are not carried over.
func withExtras(obj *planner.Object, next, s planner.Slice, without ...string) planner.Slice {
	fields := next.Fields
	u := withIdentity(obj, next.Object.DeepCopy())
	for _, md := range []struct {
		name    string
		desired map[string]string
		get     func(*unstructured.Unstructured) map[string]string
		set     func(*unstructured.Unstructured, map[string]string)
	}{
		{"labels", obj.Desired.GetLabels(), (*unstructured.Unstructured).GetLabels, (*unstructured.Unstructured).SetLabels},
		{"annotations", obj.Desired.GetAnnotations(), (*unstructured.Unstructured).GetAnnotations, (*unstructured.Unstructured).SetAnnotations},
	} {
		merged := md.get(u)
		for k, v := range md.get(s.Object) {
			if _, ok := md.desired[k]; ok {
				continue
			}
			if md.name == "labels" && slices.Contains(without, k) {
				continue
			}
			if merged == nil {
				merged = map[string]string{}
			}
			merged[k] = v
			fields = fields.Union(fieldpath.NewSet(fieldpath.MakePathOrDie("metadata", md.name, k)))
		}
		if merged != nil {
			md.set(u, merged)
		}
	}
	return planner.Slice{Manager: next.Manager, Object: u, Fields: fields, Hash: next.Hash}
}

// withIdentity makes sure u has a metadata map naming the object: a
// slice cut with no metadata field left comes back with "metadata": null,
// on which neither the name nor an annotation can be set (the request
// would go without them, and the managers annotation would be lost).
func withIdentity(obj *planner.Object, u *unstructured.Unstructured) *unstructured.Unstructured {
	if _, ok := u.Object["metadata"].(map[string]any); ok {
		return u
	}
	u.Object["metadata"] = map[string]any{}
	u.SetName(obj.Ref.Name)
	if obj.Ref.Namespace != "" {
		u.SetNamespace(obj.Ref.Namespace)
	}
	return u
}

// addLabels sets labels on u, keeping the ones it has.
func addLabels(u *unstructured.Unstructured, labels map[string]string) {
	merged := u.GetLabels()
	if merged == nil {
		merged = map[string]string{}
	}
	for k, v := range labels {
		merged[k] = v
	}
	u.SetLabels(merged)
}
