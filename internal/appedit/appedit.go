package appedit

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/planner"
)

// Manager is the field manager of the edits (and of syncd's other CLI
// writes).
const Manager planner.FieldManager = "syncd-cli"

// Apps reads and patches the App objects of one namespace (a dynamic
// client's namespaced App resource).
type Apps interface {
	Get(ctx context.Context, name string, opts metav1.GetOptions, subresources ...string) (*unstructured.Unstructured, error)
	Patch(ctx context.Context, name string, pt types.PatchType, data []byte, opts metav1.PatchOptions, subresources ...string) (*unstructured.Unstructured, error)
}

// Edit is one of the App edits: what it sets, and whether it asks for a
// reconcile.
type Edit struct {
	// Verb names the edit in messages ("suspended").
	Verb string
	// Suspend is the spec.suspend to set; nil leaves it.
	Suspend *bool
	// Requests sets the requestedAt annotation.
	Requests bool
	// RefuseSuspended refuses a suspended App: the controller does not
	// reconcile it, so the request would never be handled.
	RefuseSuspended bool
}

var yes, no = true, false

// The edits of `syncd reconcile app`, `syncd suspend app` and `syncd
// resume app`.
var (
	Reconcile = Edit{Verb: "reconcile requested", Requests: true, RefuseSuspended: true}
	Suspend   = Edit{Verb: "suspended", Suspend: &yes}
	Resume    = Edit{Verb: "resumed", Suspend: &no, Requests: true}
)

// ErrSuspended refuses a reconcile request of a suspended App.
var ErrSuspended = errors.New("is suspended")

// Request names the App an edit is made to, and when.
type Request struct {
	Namespace, Name string
	// Now is the time a reconcile request carries.
	Now time.Time
}

// Apply makes edit e to the App req names. It returns the request's
// value of the requestedAt annotation ("" for an edit that requests no
// reconcile), which status.lastHandledReconcileAt shows once the
// controller handled it.
func Apply(ctx context.Context, apps Apps, req Request, e Edit) (string, error) {
	app, err := get(ctx, apps, req)
	if err != nil {
		return "", err
	}
	if e.RefuseSuspended && app.Spec.Suspend {
		return "", fmt.Errorf("App %s/%s %w (spec.suspend: true): the controller does not reconcile it; resume it with syncd resume app %s -n %s", req.Namespace, req.Name, ErrSuspended, req.Name, req.Namespace)
	}
	requestedAt := ""
	if e.Requests {
		requestedAt = req.Now.UTC().Format(time.RFC3339Nano)
	}
	patch, err := mergePatch(e, requestedAt)
	if err != nil {
		return "", err
	}
	if _, err := apps.Patch(ctx, req.Name, types.MergePatchType, patch, metav1.PatchOptions{FieldManager: Manager.String()}); err != nil {
		return "", fmt.Errorf("App %s/%s: patch: %w", req.Namespace, req.Name, err)
	}
	return requestedAt, nil
}

// get reads the App; a missing one is an error naming it and how to
// list the others.
func get(ctx context.Context, apps Apps, req Request) (*v1alpha1.App, error) {
	u, err := apps.Get(ctx, req.Name, metav1.GetOptions{})
	if apierrors.IsNotFound(err) {
		return nil, fmt.Errorf("App %s/%s not found; syncd get apps -n %s lists the Apps of that namespace", req.Namespace, req.Name, req.Namespace)
	}
	if err != nil {
		return nil, fmt.Errorf("App %s/%s: get: %w", req.Namespace, req.Name, err)
	}
	app := &v1alpha1.App{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(u.Object, app); err != nil {
		return nil, fmt.Errorf("App %s/%s: decode: %w", req.Namespace, req.Name, err)
	}
	return app, nil
}

// mergePatch is the merge patch of an edit.
func mergePatch(e Edit, requestedAt string) ([]byte, error) {
	patch := map[string]any{}
	if requestedAt != "" {
		patch["metadata"] = map[string]any{"annotations": map[string]string{v1alpha1.RequestedAtAnnotation: requestedAt}}
	}
	if e.Suspend != nil {
		patch["spec"] = map[string]any{"suspend": *e.Suspend}
	}
	return json.Marshal(patch)
}
