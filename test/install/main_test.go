package install

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/discovery"
	"k8s.io/client-go/discovery/cached/memory"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/rest"
	"k8s.io/client-go/restmapper"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"

	_ "syncd.dev/syncd/internal/decrypt/sopsfile" // a render child of this binary reads SOPS files
	"syncd.dev/syncd/internal/renderproc"
	"syncd.dev/syncd/internal/testenv"
)

var env *testenv.Env

// TestMain starts the control plane with a kube-controller-manager that runs
// only the clusterrole-aggregation controller, which fills the aggregated
// ClusterRole syncd-manager.
func TestMain(m *testing.M) {
	renderproc.Main()       // this binary re-run as a render child renders and exits
	testenv.ForbidNetwork() // as syncd's main does: the tests run the render in process
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	e, err := testenv.Start(ctx, testenv.Options{
		ControllerManager: true,
		Controllers:       []string{"clusterrole-aggregation-controller"},
	})
	cancel()
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	env = e
	code := m.Run()
	if err := e.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "testenv: stop:", err)
	}
	os.Exit(code)
}

// controllerLog is the controller manager's log, in the Env's directory.
func controllerLog() string { return filepath.Join(env.Dir, "kube-controller-manager.log") }

// repoRoot is the repository root, from this package's directory.
const repoRoot = "../.."

func repoPath(p string) string { return filepath.Join(repoRoot, filepath.FromSlash(p)) }

// kustomizeBuild renders the kustomization in dir (relative to the
// repository root) the way `kubectl apply -k` does.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	abs, err := filepath.Abs(repoPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		m, err := r.Map()
		if err != nil {
			t.Fatalf("kustomize build %s: %s: %v", dir, r.CurId(), err)
		}
		out = append(out, &unstructured.Unstructured{Object: m})
	}
	return out
}

// cluster is a dynamic client with a discovery-backed mapper.
type cluster struct {
	dyn    dynamic.Interface
	mapper meta.RESTMapper
}

func newCluster(t *testing.T, cfg *rest.Config) *cluster {
	t.Helper()
	dyn, err := dynamic.NewForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	dc, err := discovery.NewDiscoveryClientForConfig(cfg)
	if err != nil {
		t.Fatal(err)
	}
	return &cluster{dyn: dyn, mapper: restmapper.NewDeferredDiscoveryRESTMapper(memory.NewMemCacheClient(dc))}
}

func (c *cluster) resource(obj *unstructured.Unstructured) (dynamic.ResourceInterface, error) {
	gvk := obj.GroupVersionKind()
	m, err := c.mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if err != nil {
		return nil, err
	}
	if m.Scope.Name() == meta.RESTScopeNameNamespace {
		return c.dyn.Resource(m.Resource).Namespace(obj.GetNamespace()), nil
	}
	return c.dyn.Resource(m.Resource), nil
}

// apply sends obj with Server-Side Apply as manager; dryRun adds
// dryRun=All.
func (c *cluster) apply(ctx context.Context, obj *unstructured.Unstructured, manager string, dryRun bool) (*unstructured.Unstructured, error) {
	ri, err := c.resource(obj)
	if err != nil {
		return nil, err
	}
	data, err := obj.MarshalJSON()
	if err != nil {
		return nil, err
	}
	opts := metav1.PatchOptions{FieldManager: manager}
	if dryRun {
		opts.DryRun = []string{metav1.DryRunAll}
	}
	return ri.Patch(ctx, obj.GetName(), types.ApplyPatchType, data, opts)
}

func describe(obj *unstructured.Unstructured) string {
	s := obj.GetKind() + " " + obj.GetName()
	if ns := obj.GetNamespace(); ns != "" {
		s = obj.GetKind() + " " + ns + "/" + obj.GetName()
	}
	return s
}

// installBase applies manifests/ for real as the admin (idempotent: every
// test that needs the install calls it), and waits until the aggregated ClusterRole syncd-manager has its
// rules. It returns the rendered objects.
func installBase(t *testing.T) []*unstructured.Unstructured {
	t.Helper()
	objs := kustomizeBuild(t, "manifests")
	ctx := context.Background()
	c := newCluster(t, env.Config)
	for _, o := range objs {
		if _, err := c.apply(ctx, o, "install-test", false); err != nil {
			t.Fatalf("install %s: %v", describe(o), err)
		}
	}
	cs := env.Clientset(t)
	waitFor(t, "ClusterRole syncd-manager aggregates syncd-manager-default's rules", func() (bool, error) {
		cr, err := cs.RbacV1().ClusterRoles().Get(ctx, "syncd-manager", metav1.GetOptions{})
		if apierrors.IsNotFound(err) {
			return false, nil
		}
		return err == nil && len(cr.Rules) > 0, err
	})
	return objs
}

// waitFor polls cond every 100ms until it holds, for at most a minute.
func waitFor(t *testing.T, what string, cond func() (bool, error)) {
	t.Helper()
	deadline := time.Now().Add(time.Minute)
	var last error
	for time.Now().Before(deadline) {
		ok, err := cond()
		if ok {
			return
		}
		last = err
		time.Sleep(100 * time.Millisecond) // polling interval, not a wait for speed
	}
	cm, _ := os.ReadFile(controllerLog())
	if len(cm) > 3000 {
		cm = cm[len(cm)-3000:]
	}
	t.Fatalf("timed out waiting until %s (last error: %v); kube-controller-manager log ends:\n%s", what, last, cm)
}

func mustRead(t *testing.T, p string) []byte {
	t.Helper()
	b, err := os.ReadFile(repoPath(p))
	if err != nil {
		t.Fatal(err)
	}
	return b
}
