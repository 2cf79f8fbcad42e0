package applier

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"regexp"
	"slices"
	"strings"
	"time"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/metadata"
	"k8s.io/client-go/util/retry"

	"syncd.dev/syncd/internal/planner"
)

// ObjectTimeout bounds the steps of one object once they started; they
// are not interrupted by cancelling Apply's context.
const ObjectTimeout = 2 * time.Minute

// Apply sends the plan's slices stage by stage. Within a stage it first
// reads every object and (unless ApplyOptions.SkipValidation) dry-runs
// each one it will write as soon as it is read, and stops before the
// stage's first write when the API server refuses any of them
// (validate.go), then writes the
// objects concurrently (bounded by Options.Concurrency); the slices of
// one object are sent in order. CRDs are waited for until Established
// before the next stage, and with ApplyOptions.Wait the stage's objects
// until Current (wait.go). Per-object problems are reported in the
// ChangeSet; the error is only for problems that stop the whole run (a
// cancelled context).
func (a *Applier) Apply(ctx context.Context, plan *planner.Plan, ao ApplyOptions) (*ChangeSet, error) {
	cs := &ChangeSet{App: plan.App, Revision: plan.Revision, DryRun: a.opts.DryRun}
	if ao.Policy == nil {
		ao.Policy = failPolicy()
	}
	run := &objectRun{a: a, ao: ao, app: plan.App, hpaTargets: hpaTargets(plan)}
	if ao.Accepted != nil {
		defer ao.Accepted.rotate()
	}
	defer func() { cs.Validation = run.validation.snapshot() }()
	var results [][]Change
	cs.Changes, results = skippedChanges(plan)
	for _, st := range stagesOf(plan) {
		next, err := run.stage(ctx, plan.Objects[st.start:st.end], results[st.start:st.end])
		if err != nil {
			return cs, err
		}
		if !next {
			break
		}
	}
	return cs, nil
}

// stage applies the objects of one stage and reports whether the run goes
// on to the next stage (false: the stage was refused and nothing of it
// was written). results gets each object's changes.
func (r *objectRun) stage(ctx context.Context, objs []planner.Object, results [][]Change) (bool, error) {
	stage := objs[0].Stage
	r.progress().StageStarted(stage, len(objs))
	targets := make([]*target, len(objs))
	defer r.progress().StageDone(stage)
	for i := range objs {
		if ctx.Err() != nil {
			break
		}
		targets[i] = r.decide(ctx, &objs[i], results[i])
	}
	refusals := make([]error, len(objs))
	reads := pending(targets)
	r.a.each(ctx, len(reads), func(octx context.Context, j int) {
		t := targets[reads[j]]
		r.readLive(octx, t)
		if r.validates() {
			refusals[reads[j]] = r.validate(octx, t)
		}
	})
	if err := ctx.Err(); err != nil {
		return false, err
	}
	if r.validates() && !refuseStage(stage, targets, refusals) {
		return false, nil
	}
	writes := pending(targets)
	for range len(targets) - len(writes) {
		r.progress().ObjectDone(stage)
	}
	r.a.each(ctx, len(writes), func(octx context.Context, j int) {
		r.write(octx, targets[writes[j]])
		r.progress().ObjectDone(stage)
	})
	if err := ctx.Err(); err != nil {
		return false, err
	}
	written := time.Now()
	if stage == planner.StageCRDs && !r.a.opts.DryRun {
		err := r.a.waitCRDs(ctx, objs, changesOf(targets))
		r.mappings.Clear()
		r.clients.Clear()
		if err != nil {
			return false, err
		}
	}
	if r.ao.Wait && !r.a.opts.DryRun {
		r.waitStage(ctx, targets, written)
	}
	return true, nil
}

// pending returns the indexes of the targets with something left to do
// (nil ones, of objects a cancelled run never reached, are not): a stage
// starts its workers (reads and dry runs, then writes) for these only, so
// that the objects of a no-op sync cost none.
func pending(targets []*target) []int {
	var out []int
	for i, t := range targets {
		if t != nil && !t.done {
			out = append(out, i)
		}
	}
	return out
}

// stageBounds is one stage of a plan: the objects [start, end).
type stageBounds struct{ start, end int }

// stagesOf splits the plan's objects (sorted by stage) into stages.
func stagesOf(plan *planner.Plan) []stageBounds {
	var out []stageBounds
	for start := 0; start < len(plan.Objects); {
		end := start
		for end < len(plan.Objects) && plan.Objects[end].Stage == plan.Objects[start].Stage {
			end++
		}
		out = append(out, stageBounds{start, end})
		start = end
	}
	return out
}

// each calls fn for 0..n-1, at most Options.Concurrency at once.
// Cancelling ctx stops new calls from starting, but a call already started
// finishes: fn gets a context detached from ctx's cancellation, bounded by
// ObjectTimeout, so a split create, a move or a handoff never stops
// half-way.
func (a *Applier) each(ctx context.Context, n int, fn func(octx context.Context, i int)) {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(a.opts.Concurrency)
	for i := range n {
		g.Go(func() error {
			if gctx.Err() != nil {
				return nil
			}
			octx, cancel := context.WithTimeout(context.WithoutCancel(gctx), ObjectTimeout)
			defer cancel()
			fn(octx, i)
			return nil
		})
	}
	_ = g.Wait()
}

// inStages calls fn for every object of the plan, stage by stage in plan
// order, as each does within a stage, telling the run's Progress as
// stages start and end and as each fn returns. It returns ctx's error
// when cancelled.
func (r *objectRun) inStages(ctx context.Context, plan *planner.Plan, fn func(octx context.Context, i int)) error {
	for _, st := range stagesOf(plan) {
		stage := plan.Objects[st.start].Stage
		r.progress().StageStarted(stage, st.end-st.start)
		r.a.each(ctx, st.end-st.start, func(octx context.Context, i int) {
			fn(octx, st.start+i)
			r.progress().ObjectDone(stage)
		})
		r.progress().StageDone(stage)
		if err := ctx.Err(); err != nil {
			return err
		}
	}
	return nil
}

// skippedChanges returns the ChangeSet's changes of plan before anything
// is sent, a Skipped change per slice in plan order, and each object's
// part of them: the stages fill in each object's part in place, so that
// the ChangeSet is never copied (at 10,000 objects, the changes of the
// targets and their copy gathered into the ChangeSet were 10-20 MB of the
// first sync's peak heap). Objects an interrupted run never reached keep
// their Skipped changes, so that the ChangeSet still has one Change per
// slice and OK() is false.
func skippedChanges(plan *planner.Plan) ([]Change, [][]Change) {
	n := 0
	for i := range plan.Objects {
		n += len(plan.Objects[i].Slices)
	}
	all := make([]Change, 0, n)
	parts := make([][]Change, len(plan.Objects))
	for i := range plan.Objects {
		start := len(all)
		all = appendSkipped(all, &plan.Objects[i])
		parts[i] = all[start:len(all):len(all)]
	}
	return all, parts
}

// appendSkipped appends a Skipped change per slice of obj to changes.
func appendSkipped(changes []Change, obj *planner.Object) []Change {
	for _, s := range obj.Slices {
		changes = append(changes, Change{Object: obj.Ref, Manager: s.Manager, Action: Skipped})
	}
	return changes
}

// request is one apply request: the manager it is sent as, the apply
// configuration (and, when the caller encoded it already, its JSON),
// and whether it forces and whether it is a dry run.
type request struct {
	Manager planner.FieldManager
	Object  *unstructured.Unstructured
	Body    []byte
	Force   bool
	DryRun  bool
}

// send sends one apply request and returns the API server's answer: the
// whole object.
func (a *Applier) send(ctx context.Context, ri dynamic.ResourceInterface, ref planner.ObjectRef, req request) (*unstructured.Unstructured, error) {
	var res *unstructured.Unstructured
	err := a.patch(ref, req, func(data []byte, opts metav1.PatchOptions) error {
		var err error
		res, err = ri.Patch(ctx, ref.Name, types.ApplyPatchType, data, opts)
		return err
	})
	return res, err
}

// sendForMetadata sends one apply request whose answer is read for its
// metadata only (a write's resourceVersion and managedFields, or nothing
// but the verdict of a dry run): through the metadata client mri, or,
// when the Applier has none (mri is nil), as send does.
func (a *Applier) sendForMetadata(ctx context.Context, ri dynamic.ResourceInterface, mri metadata.ResourceInterface, ref planner.ObjectRef, req request) (metav1.Object, error) {
	if mri == nil {
		res, err := a.send(ctx, ri, ref, req)
		if res == nil {
			return nil, err
		}
		return res, err
	}
	var res *metav1.PartialObjectMetadata
	err := a.patch(ref, req, func(data []byte, opts metav1.PatchOptions) error {
		var err error
		res, err = mri.Patch(ctx, ref.Name, types.ApplyPatchType, data, opts)
		return err
	})
	if res == nil {
		return nil, err
	}
	return res, err
}

// patch encodes one apply request and sends it with do, retrying
// optimistic-lock conflicts (which are not field conflicts) unless its
// object carries a resourceVersion precondition.
func (a *Applier) patch(ref planner.ObjectRef, req request, do func(data []byte, opts metav1.PatchOptions) error) error {
	m, obj, force := req.Manager, req.Object, req.Force
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields"); found {
		return fmt.Errorf("%s: refusing to send metadata.managedFields in an apply request", ref)
	}
	data, err := encoded(req)
	if err != nil {
		return fmt.Errorf("%s: encode: %w", ref, err)
	}
	opts := metav1.PatchOptions{FieldManager: string(m), Force: &force, FieldValidation: applyFieldValidation}
	if req.DryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	retryable := isRetryableConflict
	if obj.GetResourceVersion() != "" {
		// A resourceVersion precondition that failed fails again with
		// the same body: the caller reads the object and sends anew.
		retryable = func(error) bool { return false }
	}
	err = retry.OnError(retry.DefaultBackoff, retryable, func() error { return do(data, opts) })
	if err != nil {
		if cs := FieldConflicts(err); cs != nil {
			return fmt.Errorf("%s: apply as %q: %w", ref, m, cs)
		}
		return describeError(ref, "apply as "+string(m), err)
	}
	return nil
}

// applyFieldValidation is the fieldValidation directive of every apply
// request the Applier sends (patch): Ignore. On an apply the directive
// only decides whether the API server decodes the body a second time to
// find a JSON key given twice (its default, Warn, does); a field the
// schema does not declare and a list entry given twice are refused by
// the apply itself whatever the directive
// (TestApplyRefusesWhatValidationWouldCatch). syncd's bodies are
// encoding/json of maps, which cannot repeat a key, so the second decode
// could never find anything: without it each apply and dry run costs the
// API server about a tenth less CPU (docs/performance.md).
const applyFieldValidation = metav1.FieldValidationIgnore

// encoded is the JSON of req's apply configuration: the body the caller
// encoded, else the object encoded now.
func encoded(req request) ([]byte, error) {
	if req.Body != nil {
		return req.Body, nil
	}
	return json.Marshal(req.Object.Object)
}

// resource maps an object's kind to its REST resource.
// mapping returns ref's REST mapping, with an error that says what to do
// when the cluster does not know the kind.
func (a *Applier) mapping(ref planner.ObjectRef) (*meta.RESTMapping, error) {
	mapping, err := a.mapper.RESTMapping(ref.GroupKind(), ref.Version)
	if err != nil {
		if meta.IsNoMatchError(err) {
			return nil, &NoKindError{Ref: ref, Err: err}
		}
		return nil, fmt.Errorf("%s: map kind: %w", ref, err)
	}
	return mapping, nil
}

// NoKindError is an object whose kind the cluster does not serve (its
// CustomResourceDefinition is not installed yet). It wraps the mapper's
// error, so meta.IsNoMatchError recognises it.
type NoKindError struct {
	Ref planner.ObjectRef
	Err error
}

// Error says what to do.
func (e *NoKindError) Error() string {
	return fmt.Sprintf("%s: the cluster has no kind %s in API version %s: install its CustomResourceDefinition first or fix apiVersion/kind", e.Ref, e.Ref.Kind, e.Ref.GVK().GroupVersion())
}

// Unwrap returns the mapper's error.
func (e *NoKindError) Unwrap() error { return e.Err }

// client returns the dynamic client of mapping's resource for ref.
func (a *Applier) client(mapping *meta.RESTMapping, ref planner.ObjectRef) dynamic.ResourceInterface {
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(mapping.Resource).Namespace(ref.Namespace)
	}
	return a.dyn.Resource(mapping.Resource)
}

// metadataClient returns the metadata client of mapping's resource for
// ref, nil when the Applier has none (Options.Metadata).
func (a *Applier) metadataClient(mapping *meta.RESTMapping, ref planner.ObjectRef) metadata.ResourceInterface {
	switch {
	case a.meta == nil:
		return nil
	case mapping.Scope.Name() == meta.RESTScopeNameNamespace:
		return a.meta.Resource(mapping.Resource).Namespace(ref.Namespace)
	}
	return a.meta.Resource(mapping.Resource)
}

var crdResource = schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}

// waitCRDs waits until every CRD the stage applied is Established, then
// resets the mapper so the next stages find the new kinds.
func (a *Applier) waitCRDs(ctx context.Context, objs []planner.Object, results [][]Change) error {
	crds := a.dyn.Resource(crdResource)
	for i, obj := range objs {
		if obj.Ref.Kind != "CustomResourceDefinition" || failedAny(results[i]) {
			continue
		}
		err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, func(ctx context.Context) (bool, error) {
			u, err := crds.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
			if err != nil {
				return false, nil
			}
			conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
			for _, c := range conds {
				m, _ := c.(map[string]any)
				if m["type"] == "Established" && m["status"] == "True" {
					return true, nil
				}
			}
			return false, nil
		})
		if err != nil {
			results[i][0].Action = Failed
			results[i][0].Err = fmt.Errorf("%s: not Established within a minute: %w", obj.Ref, err)
		}
	}
	if r, ok := a.mapper.(meta.ResettableRESTMapper); ok {
		r.Reset()
	}
	return ctx.Err()
}

func failedAny(cs []Change) bool {
	for _, c := range cs {
		if c.Action == Failed || c.Action == Conflicted || c.Action == Skipped {
			return true
		}
	}
	return false
}

// describeError makes API errors actionable: Forbidden names the verb,
// resource and namespace and the RBAC rule to add (applying needs get and
// patch, creating through apply needs create as well, and list/watch serve
// the live cache; a refused verb outside those, like delete for a
// recreate, is added); admission denials are shown verbatim. Only the
// authorizer's refusal ("User ... cannot VERB resource ...") gets the RBAC
// hint: admission webhooks and ValidatingAdmissionPolicies deny with 403
// Forbidden too, and more RBAC would not help there.
func describeError(ref planner.ObjectRef, op string, err error) error {
	var status apierrors.APIStatus
	if apierrors.IsForbidden(err) && errors.As(err, &status) && forbiddenVerb.MatchString(status.Status().Message) {
		d := status.Status().Details
		where := "cluster-wide"
		if ref.Namespace != "" {
			where = "in namespace " + ref.Namespace
		}
		resource := ref.Kind
		if d != nil && d.Kind != "" {
			resource = d.Kind
		}
		group := ref.Group
		if group == "" {
			group = `""`
		}
		verbs := []string{"get", "list", "watch", "create", "patch"}
		if m := forbiddenVerb.FindStringSubmatch(status.Status().Message); m != nil && !slices.Contains(verbs, m[1]) {
			verbs = append(verbs, m[1])
		}
		return fmt.Errorf("%s: %s: %w; grant the identity a rule {apiGroups: [%s], resources: [%s], verbs: [%s]} %s", ref, op, err, group, resource, strings.Join(verbs, ", "), where)
	}
	return fmt.Errorf("%s: %s: %w", ref, op, err)
}

// forbiddenVerb finds the verb in the API server's Forbidden message
// (`User "u" cannot delete resource "configmaps" ...`).
var forbiddenVerb = regexp.MustCompile(`cannot ([a-z]+) resource`)
