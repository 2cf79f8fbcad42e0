package drift

import (
	"context"
	"fmt"

	"golang.org/x/sync/errgroup"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/planner"
)

// Live reads every object of plan with GETs, at most 8 at a time, for
// Detect. An object that does not exist maps to nil (Detect reports it
// deleted). An object the client may not read (Forbidden: an app's
// service account outside its RBAC) is not in the map but in unreadable,
// in plan order: pass it as Options.Unreadable so Detect reports it as
// unreadable, never as deleted. Other errors name the object.
func Live(ctx context.Context, client dynamic.Interface, mapper meta.RESTMapper, plan *planner.Plan) (live map[planner.ObjectRef]*unstructured.Unstructured, unreadable []planner.ObjectRef, err error) {
	objs := make([]*unstructured.Unstructured, len(plan.Objects))
	forbidden := make([]bool, len(plan.Objects))
	g, ctx := errgroup.WithContext(ctx)
	g.SetLimit(8)
	for i := range plan.Objects {
		ref := plan.Objects[i].Ref
		g.Go(func() error {
			gvk := ref.GVK()
			m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
			if err != nil {
				return fmt.Errorf("%s: map kind to a resource: %w", ref, err)
			}
			var ri dynamic.ResourceInterface = client.Resource(m.Resource)
			if m.Scope.Name() == meta.RESTScopeNameNamespace {
				ri = client.Resource(m.Resource).Namespace(ref.Namespace)
			}
			u, err := ri.Get(ctx, ref.Name, metav1.GetOptions{})
			if apierrors.IsNotFound(err) {
				return nil
			}
			if apierrors.IsForbidden(err) {
				forbidden[i] = true
				return nil
			}
			if err != nil {
				return fmt.Errorf("%s: get: %w", ref, err)
			}
			objs[i] = u
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, nil, err
	}
	out := make(map[planner.ObjectRef]*unstructured.Unstructured, len(objs))
	for i, u := range objs {
		if forbidden[i] {
			unreadable = append(unreadable, plan.Objects[i].Ref)
			continue
		}
		out[plan.Objects[i].Ref] = u
	}
	return out, unreadable, nil
}
