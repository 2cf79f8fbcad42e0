package repos

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
)

// ssaApps are fixture apps copied into namespaces of their own, first
// applied by another Server-Side Apply tool.
var ssaApps = []struct{ name, path, namespace string }{
	{"shop", "shop/overlays/production", "shop-ssa"},
	{"dashboards", "dashboards", "mon-ssa"},
}

// ssaObjects are the objects whose values must not change when syncd takes
// them over.
var ssaObjects = []struct {
	gvr             schema.GroupVersionResource
	namespace, name string
}{
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "shop-ssa", "frontend"},
	{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "shop-ssa", "frontend"},
	{schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}, "mon-ssa", "dashboards"},
	{schema.GroupVersionResource{Version: "v1", Resource: "services"}, "mon-ssa", "dashboards"},
	{schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}, "mon-ssa", "dashboards"},
}

// writeSSARepo copies the shop app and the dashboards' workload files of
// the fixture into a Git work tree, moved to namespaces of their own.
func writeSSARepo(t *testing.T) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.CopyFS(filepath.Join(dir, "shop"), os.DirFS("testdata/repo/shop")); err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{"shop/overlays/production/kustomization.yaml", "shop/overlays/production/namespace.yaml"} {
		rewrite(t, filepath.Join(dir, p), "shop-prod", "shop-ssa")
	}
	for _, name := range []string{"dashboards-deployment.yaml", "dashboards-service.yaml", "serviceaccount.yaml"} {
		data, err := os.ReadFile(filepath.Join("testdata/repo/monitoring", name))
		if err != nil {
			t.Fatal(err)
		}
		p := filepath.Join(dir, "dashboards", name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		writeFile(t, p, strings.ReplaceAll(string(data), "namespace: mon\n", "namespace: mon-ssa\n"))
	}
	git := exec.Command("git", "init", "-q", dir)
	if out, err := git.CombinedOutput(); err != nil {
		t.Fatalf("git init: %v\n%s", err, out)
	}
	return dir
}

func rewrite(t *testing.T, path, old, new string) {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	writeFile(t, path, strings.ReplaceAll(string(data), old, new))
}

// kubectlApply applies dir with kubectl's Server-Side Apply under
// manager, the way Flux's kustomize-controller or a pipeline would.
func kubectlApply(t *testing.T, manager string, args ...string) {
	t.Helper()
	cmd := exec.Command(filepath.Join(env.BinDir, "kubectl"), append([]string{"--kubeconfig", env.Kubeconfig, "apply", "--server-side", "--field-manager", manager}, args...)...)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --server-side %v: %v\n%s", args, err, out)
	}
}

// liveState is each object's content (less metadata and status), labels
// and annotations. The generation is left out: a Deployment's moves with
// any annotation change (the API server copies them to ReplicaSets), and
// syncd adds its managers annotation when it takes an object over.
func liveState(t *testing.T, dyn dynamic.Interface) map[string]any {
	t.Helper()
	out := map[string]any{}
	for _, o := range ssaObjects {
		u, err := dyn.Resource(o.gvr).Namespace(o.namespace).Get(context.Background(), o.name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		content := u.DeepCopy().Object
		delete(content, "metadata")
		delete(content, "status")
		out[fmt.Sprintf("%s %s/%s", o.gvr.Resource, o.namespace, o.name)] = map[string]any{"labels": u.GetLabels(), "annotations": u.GetAnnotations(), "content": content}
	}
	return out
}

// TestTakeOverFromAnotherSSATool: objects last applied by another SSA
// manager from the same manifests (a team moving from Flux) are taken
// over under conflicts: fail with exit 0 and no value changed; a field
// whose value Git changes is still a conflict naming that manager.
func TestTakeOverFromAnotherSSATool(t *testing.T) {
	ctx := context.Background()
	cs := env.Clientset(t)
	for _, ns := range []string{inventoryNamespace, "mon-ssa"} {
		_, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{})
		if err != nil && !strings.Contains(err.Error(), "already exists") {
			t.Fatal(err)
		}
	}
	repo := writeSSARepo(t)
	kubectlApply(t, "kustomize-controller", "-k", filepath.Join(repo, "shop/overlays/production"))
	kubectlApply(t, "kustomize-controller", "-f", filepath.Join(repo, "dashboards"))
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	before := liveState(t, dyn)

	tmp := t.TempDir()
	f := &fixture{config: filepath.Join(tmp, "syncd.yaml"), cache: filepath.Join(tmp, "cache"), home: filepath.Join(tmp, "home")}
	var b strings.Builder
	b.WriteString("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git: {url: \"file:///nonexistent\", branch: main, interval: 1m}\napps:\n")
	for _, a := range ssaApps {
		fmt.Fprintf(&b, "- name: %s\n  source: repo\n  path: %s\n  namespace: %s\n  conflicts: {default: fail}\n", a.name, a.path, a.namespace)
	}
	writeFile(t, f.config, b.String())

	for _, a := range ssaApps {
		r := f.syncd(t, f.args("apply", "--app", a.name, "--path", filepath.Join(repo, a.path))...)
		t.Logf("syncd apply --app %s over kustomize-controller's objects:\n%s", a.name, r)
		if r.code != 0 {
			t.Fatalf("apply --app %s: want exit 0 (same values are no conflict)\n%s", a.name, r)
		}
		if strings.Contains(r.stdout, "conflict:") {
			t.Errorf("apply --app %s printed a conflict for values it does not change\n%s", a.name, r)
		}
	}
	after := liveState(t, dyn)
	// syncd adds its inventory label and its managers annotation; nothing
	// else may change, and no generation may move.
	for _, s := range after {
		delete(s.(map[string]any)["labels"].(map[string]string), "applyset.kubernetes.io/part-of")
		annotations := s.(map[string]any)["annotations"].(map[string]string)
		for k := range annotations {
			if strings.HasPrefix(k, "managers.syncd.dev/") {
				delete(annotations, k)
			}
		}
	}
	if diff := cmp.Diff(before, after, cmpopts.EquateEmpty()); diff != "" {
		t.Errorf("taking over changed values (-before +after):\n%s", diff)
	}

	// Git now changes one field kustomize-controller still co-owns.
	rewrite(t, filepath.Join(repo, "dashboards/dashboards-deployment.yaml"), "dashboards:11.2.0", "dashboards:11.3.0")
	r := f.syncd(t, f.args("apply", "--app", "dashboards", "--path", filepath.Join(repo, "dashboards"))...)
	if r.code != 3 {
		t.Fatalf("apply of a changed image co-owned by kustomize-controller: want exit 3\n%s", r)
	}
	if !strings.Contains(r.stdout, `.spec.template.spec.containers[name="dashboards"].image`) || !strings.Contains(r.stdout, "kustomize-controller") {
		t.Errorf("the conflict does not name the image and kustomize-controller\n%s", r)
	}
	u, err := dyn.Resource(ssaObjects[2].gvr).Namespace("mon-ssa").Get(ctx, "dashboards", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(u.Object, "spec", "template", "spec", "containers")
	if img := containers[0].(map[string]any)["image"]; img != "registry.syncd.test/dashboards:11.2.0" {
		t.Errorf("image after a refused apply = %v, want it untouched", img)
	}
}
