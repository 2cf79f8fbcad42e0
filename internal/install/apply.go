package install

import (
	"context"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
)

// FieldManager is the field manager `syncd install` applies as.
const FieldManager = "syncd-install"

// Action is what an apply did to one object.
type Action string

// The actions of Apply.
const (
	Created    Action = "created"
	Configured Action = "configured"
	Unchanged  Action = "unchanged"
)

// Change is one object's Action.
type Change struct {
	Object string // "Kind namespace/name"
	Action Action
}

// Applier applies rendered objects with Server-Side Apply.
type Applier struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

// NewApplier returns an Applier over a dynamic client and its mapper.
func NewApplier(dyn dynamic.Interface, mapper meta.RESTMapper) *Applier {
	return &Applier{dyn: dyn, mapper: mapper}
}

// ApplyOptions are per-call settings of Apply.
type ApplyOptions struct {
	// ForceConflicts takes fields another manager owns with other values
	// (kubectl's --force-conflicts); default: such a conflict fails the
	// object.
	ForceConflicts bool
}

// Apply applies objs in order as FieldManager and returns what happened
// to each. It stops at the first error, which names the object.
func (a *Applier) Apply(ctx context.Context, objs []*unstructured.Unstructured, opts ApplyOptions) ([]Change, error) {
	changes := make([]Change, 0, len(objs))
	for _, o := range objs {
		action, err := a.applyOne(ctx, o, opts)
		if err != nil {
			return changes, fmt.Errorf("%s: apply: %w", Describe(o), err)
		}
		changes = append(changes, Change{Object: Describe(o), Action: action})
	}
	return changes, nil
}

// applyOne applies o and tells created, configured and unchanged apart by
// the resourceVersion before and after: the API server does not write an
// apply that changes nothing.
func (a *Applier) applyOne(ctx context.Context, o *unstructured.Unstructured, opts ApplyOptions) (Action, error) {
	ri, err := a.resource(o)
	if err != nil {
		return "", err
	}
	before := ""
	live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
	switch {
	case err == nil:
		before = live.GetResourceVersion()
	case !apierrors.IsNotFound(err):
		return "", err
	}
	data, err := o.MarshalJSON()
	if err != nil {
		return "", err
	}
	force := opts.ForceConflicts
	after, err := ri.Patch(ctx, o.GetName(), types.ApplyPatchType, data, metav1.PatchOptions{FieldManager: FieldManager, Force: &force})
	if err != nil {
		return "", err
	}
	switch {
	case after.GetResourceVersion() == before:
		return Unchanged, nil
	case before == "":
		return Created, nil
	}
	return Configured, nil
}

func (a *Applier) resource(o *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := o.GroupVersionKind()
	m, err := a.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return a.dyn.Resource(m.Resource).Namespace(o.GetNamespace()), nil
	}
	return a.dyn.Resource(m.Resource), nil
}

// Describe names an object as "Kind namespace/name" ("Kind name" when
// cluster-scoped).
func Describe(o *unstructured.Unstructured) string {
	if ns := o.GetNamespace(); ns != "" {
		return o.GetKind() + " " + ns + "/" + o.GetName()
	}
	return o.GetKind() + " " + o.GetName()
}

// Rollout is one Deployment's kstatus.
type Rollout struct {
	Object  string
	Status  status.Status
	Message string
}

// Rollouts returns the kstatus of each Deployment of objs as the cluster
// has it.
func (a *Applier) Rollouts(ctx context.Context, objs []*unstructured.Unstructured) ([]Rollout, error) {
	var out []Rollout
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		ri, err := a.resource(o)
		if err != nil {
			return nil, err
		}
		live, err := ri.Get(ctx, o.GetName(), metav1.GetOptions{})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", Describe(o), err)
		}
		res, err := status.Compute(live)
		if err != nil {
			return nil, fmt.Errorf("%s: status: %w", Describe(o), err)
		}
		out = append(out, Rollout{Object: Describe(o), Status: res.Status, Message: res.Message})
	}
	return out, nil
}

// WaitOptions are the settings of WaitRollout.
type WaitOptions struct {
	// Timeout bounds the wait.
	Timeout time.Duration
	// Interval is the time between two reads; default 2s.
	Interval time.Duration
}

// WaitRollout waits until every Deployment of objs is Current (kstatus:
// updated, available, observed) and returns the last Rollouts. It fails
// at once on a Deployment that is Failed, and at the timeout with the
// ones not Current and their messages.
func (a *Applier) WaitRollout(ctx context.Context, objs []*unstructured.Unstructured, opts WaitOptions) ([]Rollout, error) {
	interval := opts.Interval
	if interval <= 0 {
		interval = 2 * time.Second
	}
	ctx, cancel := context.WithTimeout(ctx, opts.Timeout)
	defer cancel()
	for {
		rs, err := a.Rollouts(ctx, objs)
		if err != nil {
			return rs, err
		}
		pending := notCurrent(rs)
		if len(pending) == 0 {
			return rs, nil
		}
		if pending[0].Status == status.FailedStatus {
			return rs, fmt.Errorf("%s failed: %s", pending[0].Object, pending[0].Message)
		}
		select {
		case <-ctx.Done():
			return rs, fmt.Errorf("%s not rolled out after %s: %s (%s)", pending[0].Object, opts.Timeout, pending[0].Status, pending[0].Message)
		case <-time.After(interval):
		}
	}
}

// notCurrent returns the rollouts that are not Current, Failed first.
func notCurrent(rs []Rollout) []Rollout {
	var out []Rollout
	for _, r := range rs {
		switch r.Status {
		case status.CurrentStatus:
		case status.FailedStatus:
			out = append([]Rollout{r}, out...)
		default:
			out = append(out, r)
		}
	}
	return out
}
