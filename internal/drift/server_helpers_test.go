package drift

import (
	"context"
	"encoding/json"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/restmapper"

	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

func TestMain(m *testing.M) { testenv.Main(m, testenv.Options{}, &env) }

// cluster bundles the clients a server-backed test uses.
type cluster struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newCluster(t testing.TB) *cluster {
	t.Helper()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (c *cluster) resource(t testing.TB, u *unstructured.Unstructured) dynamic.ResourceInterface {
	t.Helper()
	gvk := u.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		t.Fatalf("%s: %v", gvk, err)
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(u.GetNamespace())
	}
	return c.dyn.Resource(m.Resource)
}

// apply server-side applies obj as manager.
func (c *cluster) apply(t testing.TB, obj *unstructured.Unstructured, manager string, force bool) {
	t.Helper()
	data, err := json.Marshal(obj.Object)
	if err != nil {
		t.Fatal(err)
	}
	_, err = c.resource(t, obj).Patch(context.Background(), obj.GetName(), types.ApplyPatchType, data,
		metav1.PatchOptions{FieldManager: manager, Force: &force})
	if err != nil {
		t.Fatalf("apply %s/%s as %s: %v", obj.GetKind(), obj.GetName(), manager, err)
	}
}

// applyPlan applies every slice of plan as its manager, without forcing,
// the way the applier does.
func (c *cluster) applyPlan(t testing.TB, plan *planner.Plan, force bool) {
	t.Helper()
	for _, o := range plan.Objects {
		for _, s := range o.Slices {
			c.apply(t, s.Object, string(s.Manager), force)
		}
	}
}

// live reads every object of plan with Live.
func (c *cluster) live(t testing.TB, plan *planner.Plan) map[planner.ObjectRef]*unstructured.Unstructured {
	t.Helper()
	out, unreadable, err := Live(context.Background(), c.dyn, c.mapper, plan)
	if err != nil {
		t.Fatal(err)
	}
	if len(unreadable) > 0 {
		t.Fatalf("Live: the test's admin client may not read %v", unreadable)
	}
	return out
}

// mergePatch sends a JSON merge patch as an Update by manager.
func (c *cluster) mergePatch(t testing.TB, like *unstructured.Unstructured, manager, patch string) {
	t.Helper()
	_, err := c.resource(t, like).Patch(context.Background(), like.GetName(), types.MergePatchType, []byte(patch),
		metav1.PatchOptions{FieldManager: manager})
	if err != nil {
		t.Fatalf("merge-patch %s/%s as %s: %v", like.GetKind(), like.GetName(), manager, err)
	}
}

var zero int64

// deleteNow deletes without a grace period.
var deleteNow = metav1.DeleteOptions{GracePeriodSeconds: &zero}
