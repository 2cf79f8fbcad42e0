package install

import (
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/kustomize/api/krusty"
	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// TestChartMatchesManifests renders the chart the way `syncd install`
// does and compares it, object for object, with the kustomize build of
// manifests/ and of the overlays docs/install.md documents, so that the
// two installs cannot drift apart. The differences allowed are
// documentedDifferences (docs/install.md#the-chart-and-manifests).
func TestChartMatchesManifests(t *testing.T) {
	tests := map[string]struct {
		set       []string
		kustomize string
	}{
		"default": {kustomize: "manifests"},
		"app-only (config.enabled=false)": {
			set:       []string{"config.enabled=false"},
			kustomize: "test/install/testdata/app-only",
		},
		"restricted egress": {
			set: []string{
				"networkPolicy.restrictedEgress.enabled=true",
				"networkPolicy.restrictedEgress.apiServerCIDRs={10.0.0.1/32}",
				"networkPolicy.restrictedEgress.remoteClusterCIDRs={10.20.0.0/24,203.0.113.7/32}",
			},
			kustomize: "test/install/testdata/restricted-egress",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			chart, err := Render(RenderOptions{Set: tc.set})
			if err != nil {
				t.Fatal(err)
			}
			want := byID(kustomizeBuild(t, tc.kustomize))
			got := byID(chart)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("chart (+) differs from kustomize build %s (-):\n%s", tc.kustomize, diff)
			}
		})
	}
}

// TestChartDefaultsLeaveOutTheNamespace: rendered as helm install does
// (no syncd install values), the chart has no Namespace object, the one
// difference helm's --create-namespace needs.
func TestChartDefaultsLeaveOutTheNamespace(t *testing.T) {
	withNS, err := Render(RenderOptions{})
	if err != nil {
		t.Fatal(err)
	}
	helm, err := Render(RenderOptions{ChartDefaults: true})
	if err != nil {
		t.Fatal(err)
	}
	var gone []string
	for id := range byID(withNS) {
		if _, ok := byID(helm)[id]; !ok {
			gone = append(gone, id)
		}
	}
	if diff := cmp.Diff([]string{"Namespace /syncd-system"}, gone); diff != "" {
		t.Errorf("objects only syncd install renders (-want +got):\n%s", diff)
	}
}

// byID indexes objects by "Kind namespace/name", normalized by
// documentedDifferences.
func byID(objs []*unstructured.Unstructured) map[string]map[string]any {
	out := map[string]map[string]any{}
	for _, o := range objs {
		o = o.DeepCopy()
		documentedDifferences(o)
		out[o.GetKind()+" "+o.GetNamespace()+"/"+o.GetName()] = o.Object
	}
	return out
}

// documentedDifferences removes from o what may differ between the chart
// and manifests/:
//   - a CRD's labels: kustomize labels every object, the chart's crds/
//     are copied verbatim (Helm does not template crds/);
//   - the order of an RBAC rule's lists (apiGroups, resources, verbs):
//     the chart lists syncd.dev's resources from its CRDs, sorted.
func documentedDifferences(o *unstructured.Unstructured) {
	if o.GetKind() == "CustomResourceDefinition" {
		o.SetLabels(nil)
	}
	rules, ok, _ := unstructured.NestedSlice(o.Object, "rules")
	if !ok {
		return
	}
	for _, r := range rules {
		rule, _ := r.(map[string]any)
		for _, key := range []string{"apiGroups", "resources", "verbs", "resourceNames", "nonResourceURLs"} {
			if list, ok := rule[key].([]any); ok {
				slices.SortFunc(list, func(a, b any) int { return cmpString(a, b) })
			}
		}
	}
	_ = unstructured.SetNestedSlice(o.Object, rules, "rules")
}

func cmpString(a, b any) int {
	as, _ := a.(string)
	bs, _ := b.(string)
	switch {
	case as < bs:
		return -1
	case as > bs:
		return 1
	}
	return 0
}

// kustomizeBuild renders the kustomization in dir, relative to the
// repository root, as `kubectl apply -k` does.
func kustomizeBuild(t *testing.T, dir string) []*unstructured.Unstructured {
	t.Helper()
	abs, err := filepath.Abs(filepath.Join("..", "..", filepath.FromSlash(dir)))
	if err != nil {
		t.Fatal(err)
	}
	resMap, err := krusty.MakeKustomizer(krusty.MakeDefaultOptions()).Run(filesys.MakeFsOnDisk(), abs)
	if err != nil {
		t.Fatalf("kustomize build %s: %v", dir, err)
	}
	var out []*unstructured.Unstructured
	for _, r := range resMap.Resources() {
		data, err := r.MarshalJSON()
		if err != nil {
			t.Fatalf("kustomize build %s: %s: %v", dir, r.CurId(), err)
		}
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON(data); err != nil {
			t.Fatalf("kustomize build %s: %s: %v", dir, r.CurId(), err)
		}
		out = append(out, u)
	}
	return out
}

// TestChartShards: shards=N renders, per shard K, a Deployment, a
// PodDisruptionBudget and two Services named -shard-K, selecting only
// that shard's pods, with --shards=N --shard=K, as docs/install.md
// describes sharding.
func TestChartShards(t *testing.T) {
	objs, err := Render(RenderOptions{Set: []string{"shards=2"}})
	if err != nil {
		t.Fatal(err)
	}
	var got []string
	for _, o := range objs {
		switch o.GetKind() {
		case "Deployment":
			containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
			args, _, _ := unstructured.NestedStringSlice(containers[0].(map[string]any), "args")
			shard, _, _ := unstructured.NestedString(o.Object, "spec", "selector", "matchLabels", "syncd.dev/shard")
			got = append(got, fmt.Sprintf("Deployment %s shard %s: %v", o.GetName(), shard, args[len(args)-2:]))
		case "Service", "PodDisruptionBudget":
			sel, _, _ := unstructured.NestedString(o.Object, "spec", "selector", "syncd.dev/shard")
			if o.GetKind() == "PodDisruptionBudget" {
				sel, _, _ = unstructured.NestedString(o.Object, "spec", "selector", "matchLabels", "syncd.dev/shard")
			}
			got = append(got, fmt.Sprintf("%s %s shard %s", o.GetKind(), o.GetName(), sel))
		}
	}
	want := []string{
		"Service syncd-shard-0 shard 0", "Service syncd-shard-1 shard 1",
		"Service syncd-webhook-shard-0 shard 0", "Service syncd-webhook-shard-1 shard 1",
		"PodDisruptionBudget syncd-shard-0 shard 0", "PodDisruptionBudget syncd-shard-1 shard 1",
		"Deployment syncd-shard-0 shard 0: [--shards=2 --shard=0]", "Deployment syncd-shard-1 shard 1: [--shards=2 --shard=1]",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("shard objects (-want +got):\n%s", diff)
	}
}

// TestRenderValues: --version sets the image tag, and a values file and
// --set win over it, later over earlier, as with helm.
func TestRenderValues(t *testing.T) {
	file := filepath.Join(t.TempDir(), "values.yaml")
	if err := os.WriteFile(file, []byte("image:\n  repository: registry.example.org/syncd\n  tag: from-file\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		opts RenderOptions
		want string
	}{
		"chart default":      {RenderOptions{}, "registry.example.com/syncd:dev"},
		"version":            {RenderOptions{ImageTag: "v1.2.3"}, "registry.example.com/syncd:v1.2.3"},
		"file over version":  {RenderOptions{ImageTag: "v1.2.3", ValueFiles: []string{file}}, "registry.example.org/syncd:from-file"},
		"set over file":      {RenderOptions{ValueFiles: []string{file}, Set: []string{"image.tag=from-set"}}, "registry.example.org/syncd:from-set"},
		"digest":             {RenderOptions{Set: []string{"image.digest=sha256:abc"}}, "registry.example.com/syncd:dev@sha256:abc"},
		"namespace override": {RenderOptions{Namespace: "gitops", ImageTag: "v1"}, "registry.example.com/syncd:v1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			objs, err := Render(tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			for _, o := range objs {
				if o.GetKind() != "Deployment" {
					continue
				}
				if o.GetNamespace() != tc.opts.namespace() {
					t.Errorf("Deployment in %q, want %q", o.GetNamespace(), tc.opts.namespace())
				}
				containers, _, _ := unstructured.NestedSlice(o.Object, "spec", "template", "spec", "containers")
				if got := containers[0].(map[string]any)["image"]; got != tc.want {
					t.Errorf("image %q, want %q", got, tc.want)
				}
			}
		})
	}
}
