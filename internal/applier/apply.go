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
	"k8s.io/client-go/util/retry"

	"syncd.dev/syncd/internal/planner"
)

// ObjectTimeout bounds the steps of one object once they started; they
// are not interrupted by cancelling Apply's context.
const ObjectTimeout = 2 * time.Minute

// Apply sends the plan's slices stage by stage. Within a stage objects are
// applied concurrently (bounded by Options.Concurrency); the slices of one
// object are sent in order. CRDs are waited for until Established before
// the next stage. Per-object problems are reported in the ChangeSet; the
// error is only for problems that stop the whole run (a cancelled
// context).
func (a *Applier) Apply(ctx context.Context, plan *planner.Plan, ao ApplyOptions) (*ChangeSet, error) {
	cs := &ChangeSet{App: plan.App, Revision: plan.Revision, DryRun: a.opts.DryRun}
	if ao.Policy == nil {
		ao.Policy = &Policy{def: "fail"}
	}
	run := &objectRun{a: a, ao: ao, app: plan.App, hpaTargets: hpaTargets(plan)}
	results := make([][]Change, len(plan.Objects))
	err := a.inStages(ctx, plan, func(octx context.Context, i int) {
		results[i] = run.apply(octx, &plan.Objects[i])
	}, func(start, end int) error {
		if plan.Objects[start].Stage != planner.StageCRDs || a.opts.DryRun {
			return nil
		}
		err := a.waitCRDs(ctx, plan.Objects[start:end], results[start:end])
		run.mappings.Clear()
		return err
	})
	return a.collect(cs, plan, results), err
}

// inStages calls fn for every object of the plan, stage by stage in plan
// order, at most Options.Concurrency objects at once within a stage, and
// done after each stage (it may stop the run with an error). Cancelling
// ctx stops new objects from starting, but an object already started
// finishes all its steps: fn gets a context detached from ctx's
// cancellation, bounded by ObjectTimeout, so a split create, a move or a
// handoff never stops half-way. It returns ctx's error when cancelled.
func (a *Applier) inStages(ctx context.Context, plan *planner.Plan, fn func(octx context.Context, i int), done func(start, end int) error) error {
	for start := 0; start < len(plan.Objects); {
		end := start
		for end < len(plan.Objects) && plan.Objects[end].Stage == plan.Objects[start].Stage {
			end++
		}
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(a.opts.Concurrency)
		for i := start; i < end; i++ {
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
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := done(start, end); err != nil {
			return err
		}
		start = end
	}
	return nil
}

// collect gathers the changes in plan order. Objects an interrupted run
// never reached get a Skipped change per slice, so that the ChangeSet
// still has one Change per slice and OK() is false.
func (a *Applier) collect(cs *ChangeSet, plan *planner.Plan, results [][]Change) *ChangeSet {
	for i, r := range results {
		if r == nil {
			for _, s := range plan.Objects[i].Slices {
				r = append(r, Change{Object: plan.Objects[i].Ref, Manager: s.Manager, Action: Skipped})
			}
		}
		cs.Changes = append(cs.Changes, r...)
	}
	return cs
}

// send sends one apply request as m, forcing only when force is set,
// retrying optimistic-lock conflicts (which are not field conflicts)
// unless obj carries a resourceVersion precondition.
func (a *Applier) send(ctx context.Context, ri dynamic.ResourceInterface, ref planner.ObjectRef, m planner.FieldManager, obj *unstructured.Unstructured, force, dryRun bool) (*unstructured.Unstructured, error) {
	if _, found, _ := unstructured.NestedFieldNoCopy(obj.Object, "metadata", "managedFields"); found {
		return nil, fmt.Errorf("%s: refusing to send metadata.managedFields in an apply request", ref)
	}
	data, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, fmt.Errorf("%s: encode: %w", ref, err)
	}
	opts := metav1.PatchOptions{FieldManager: string(m), Force: &force}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	retryable := isRetryableConflict
	if obj.GetResourceVersion() != "" {
		// A resourceVersion precondition that failed fails again with
		// the same body: the caller reads the object and sends anew.
		retryable = func(error) bool { return false }
	}
	var res *unstructured.Unstructured
	err = retry.OnError(retry.DefaultBackoff, retryable, func() error {
		var err error
		res, err = ri.Patch(ctx, ref.Name, types.ApplyPatchType, data, opts)
		return err
	})
	if err != nil {
		if cs := FieldConflicts(err); cs != nil {
			return nil, fmt.Errorf("%s: apply as %q: %w", ref, m, cs)
		}
		return nil, describeError(ref, "apply as "+string(m), err)
	}
	return res, nil
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
