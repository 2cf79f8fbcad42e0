package planner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/config"
)

const (
	clusterWidgetCRD = `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: clusterwidgets.example.com}
spec:
  group: example.com
  names: {kind: ClusterWidget, plural: clusterwidgets, singular: clusterwidget, listKind: ClusterWidgetList}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`
	clusterWidget = "apiVersion: example.com/v1\nkind: ClusterWidget\nmetadata: {name: w1}\nspec: {size: 3}\n"
	vap           = "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: p1}\n" +
		"spec: {failurePolicy: Fail, validations: [{expression: \"true\"}]}\n"
	namespacedWidget = "apiVersion: example.org/v1\nkind: Gadget\nmetadata: {name: g1}\n"
)

// nsOutcome is what a plan made of a cluster-scoped object's namespace:
// the objects, the warnings, or the error.
type nsOutcome struct {
	objects  []string
	warnings []string
	err      string
}

// planNamespaces renders the tree (the app at dir, a kustomization or a
// plain directory) and plans it with opts.
func planNamespaces(t *testing.T, files map[string]string, dir string, opts Options) nsOutcome {
	t.Helper()
	root := writeTree(t, files)
	ms, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, dir)})
	if err != nil {
		return nsOutcome{err: err.Error()}
	}
	p, err := newFromConfig(config.App{Name: "x"}, opts)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), ms)
	if err != nil {
		return nsOutcome{err: err.Error()}
	}
	var out nsOutcome
	for _, o := range plan.Objects {
		out.objects = append(out.objects, o.Ref.String())
		if ann := o.Desired.GetAnnotations(); ann != nil {
			t.Errorf("%s: annotations %v left on the object", o.Ref, ann)
		}
	}
	for _, w := range plan.Warnings {
		if !strings.Contains(w.Message, "no schema is known") { // Gadget's, beside the point
			out.warnings = append(out.warnings, w.String())
		}
	}
	return out
}

// TestKustomizeNamespaceOnClusterScoped: a kustomization's namespace:
// that kustomize sets on a cluster-scoped custom object (its scope from a
// CRD of the render or from the cluster) is dropped with a warning naming
// the kustomization and the object; a namespace the author wrote on a
// cluster-scoped object is refused, in a plain directory and in a
// kustomize build alike, naming the file it is in.
func TestKustomizeNamespaceOnClusterScoped(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.com", Version: "v1"}
	clusterMapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	clusterMapper.Add(gv.WithKind("ClusterWidget"), meta.RESTScopeRoot)
	clusterMapper.Add(schema.GroupVersion{Version: "v1"}.WithKind("ConfigMap"), meta.RESTScopeNamespace)

	dropped := func(file, kust string) string {
		return `example.com/ClusterWidget w1 (` + file + `): ClusterWidget is cluster-scoped: metadata.namespace "team-a", set by the namespace field of ` + kust +
			` was dropped (kustomize cannot know a custom kind's scope; the API server would ignore it); to silence this warning, list the object in a kustomization that sets no namespace`
	}
	tests := map[string]struct {
		files map[string]string
		dir   string
		opts  Options
		want  nsOutcome
	}{
		"kustomization namespace, scope from the render's CRD (the hand trial)": {
			files: map[string]string{
				"app/kustomization.yaml": "namespace: team-a\nresources: [crd.yaml, widgets.yaml, vap.yaml]\n",
				"app/crd.yaml":           clusterWidgetCRD, "app/widgets.yaml": clusterWidget, "app/vap.yaml": vap,
			},
			dir: "app",
			want: nsOutcome{
				objects:  []string{"apiextensions.k8s.io/CustomResourceDefinition clusterwidgets.example.com", "admissionregistration.k8s.io/ValidatingAdmissionPolicy p1", "example.com/ClusterWidget w1"},
				warnings: []string{dropped("app/widgets.yaml", "app/kustomization.yaml,")},
			},
		},
		"kustomization namespace, scope from the cluster": {
			files: map[string]string{
				"app/kustomization.yaml": "namespace: team-a\nresources: [widgets.yaml]\n",
				"app/widgets.yaml":       clusterWidget,
			},
			dir:  "app",
			opts: Options{Mapper: clusterMapper},
			want: nsOutcome{
				objects:  []string{"example.com/ClusterWidget w1"},
				warnings: []string{dropped("app/widgets.yaml", "app/kustomization.yaml,")},
			},
		},
		"the overlay's namespace, over the base's, is the one named": {
			files: map[string]string{
				"overlays/prod/kustomization.yaml": "namespace: team-a\nresources: [../../base]\n",
				"base/kustomization.yaml":          "namespace: base-ns\nresources: [crd.yaml, widgets.yaml]\n",
				"base/crd.yaml":                    clusterWidgetCRD, "base/widgets.yaml": clusterWidget,
			},
			dir: "overlays/prod",
			want: nsOutcome{
				objects:  []string{"apiextensions.k8s.io/CustomResourceDefinition clusterwidgets.example.com", "example.com/ClusterWidget w1"},
				warnings: []string{dropped("base/widgets.yaml", "overlays/prod/kustomization.yaml,")},
			},
		},
		"a namespaced custom kind keeps the kustomization's namespace": {
			files: map[string]string{
				"app/kustomization.yaml": "namespace: team-a\nresources: [gadget.yaml]\n",
				"app/gadget.yaml":        namespacedWidget,
			},
			dir: "app",
			want: nsOutcome{
				objects:  []string{"example.org/Gadget team-a/g1"},
				warnings: []string{"example.org/Gadget team-a/g1 (app/gadget.yaml): kind Gadget.example.org is not built in and no CustomResourceDefinition in this render defines it; assumed namespaced"},
			},
		},
		"a namespace the author wrote in a kustomize build is refused": {
			files: map[string]string{
				"app/kustomization.yaml": "resources: [crd.yaml, widgets.yaml]\n",
				"app/crd.yaml":           clusterWidgetCRD,
				"app/widgets.yaml":       "apiVersion: example.com/v1\nkind: ClusterWidget\nmetadata: {name: w1, namespace: team-a}\n",
			},
			dir:  "app",
			want: nsOutcome{err: `app/widgets.yaml (example.com/v1 ClusterWidget team-a w1): ClusterWidget is cluster-scoped but sets metadata.namespace "team-a": delete metadata.namespace`},
		},
		"a namespace written in a plain directory is refused": {
			files: map[string]string{
				"app/crd.yaml":     clusterWidgetCRD,
				"app/widgets.yaml": "apiVersion: example.com/v1\nkind: ClusterWidget\nmetadata: {name: w1, namespace: team-a}\n",
			},
			dir:  "app",
			want: nsOutcome{err: `widgets.yaml: document 1 (example.com/v1 ClusterWidget team-a w1): ClusterWidget is cluster-scoped but sets metadata.namespace "team-a": delete metadata.namespace`},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := planNamespaces(t, tc.files, tc.dir, tc.opts)
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(nsOutcome{})); diff != "" {
				t.Errorf("outcome (-want +got):\n%s", diff)
			}
		})
	}
}

// TestTakeKustomizeNamespace: the render's mark comes off whole, the
// object's own annotations stay.
func TestTakeKustomizeNamespace(t *testing.T) {
	tests := map[string]struct {
		doc      string
		wantFile string
		wantAnn  map[string]string
	}{
		"mark alone":       {doc: "metadata: {name: a, annotations: {" + kustomizeNamespaceAnnotation + ": k.yaml}}", wantFile: "k.yaml"},
		"mark and another": {doc: "metadata: {name: a, annotations: {" + kustomizeNamespaceAnnotation + ": k.yaml, x: v}}", wantFile: "k.yaml", wantAnn: map[string]string{"x": "v"}},
		"no mark":          {doc: "metadata: {name: a, annotations: {x: v}}", wantAnn: map[string]string{"x": "v"}},
		"no annotations":   {doc: "metadata: {name: a}"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj, err := decodeDocument([]byte("apiVersion: v1\nkind: ConfigMap\n" + tc.doc + "\n"))
			if err != nil {
				t.Fatal(err)
			}
			if got := takeKustomizeNamespace(obj); got != tc.wantFile {
				t.Errorf("file = %q, want %q", got, tc.wantFile)
			}
			if diff := cmp.Diff(tc.wantAnn, obj.GetAnnotations()); diff != "" {
				t.Errorf("annotations (-want +got):\n%s", diff)
			}
		})
	}
}
