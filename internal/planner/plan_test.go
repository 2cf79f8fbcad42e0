package planner

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/redact"
)

func decodeAll(t testing.TB, docs string) []Manifest {
	t.Helper()
	ms, errs := decodeStream(strings.NewReader(docs), "test.yaml")
	if errs != nil {
		t.Fatal(errs)
	}
	return ms
}

func mustPlan(t testing.TB, app config.App, opts Options, docs string) *Plan {
	t.Helper()
	p, err := newFromConfig(app, opts)
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), decodeAll(t, docs))
	if err != nil {
		t.Fatal(err)
	}
	return plan
}

func refs(plan *Plan) []string {
	var out []string
	for _, o := range plan.Objects {
		out = append(out, o.Stage.String()+" "+o.Ref.String())
	}
	return out
}

func TestOrderAndScope(t *testing.T) {
	docs := `
apiVersion: v1
kind: ConfigMap
metadata: {name: b}
---
apiVersion: apps/v1
kind: Deployment
metadata: {name: a, namespace: other}
spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}
---
apiVersion: v1
kind: ConfigMap
metadata: {name: a}
---
apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata: {name: crb}
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: r}
---
apiVersion: storage.k8s.io/v1
kind: StorageClass
metadata: {name: fast}
provisioner: example.com/disk
---
apiVersion: v1
kind: Namespace
metadata: {name: zz}
---
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Cluster
  names: {kind: Widget, plural: widgets}
  versions: [{name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}}]
---
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
---
apiVersion: example.org/v1
kind: Gadget
metadata: {name: g}
spec: {size: 3}
---
apiVersion: v1
kind: Namespace
metadata: {name: aa}
`
	plan := mustPlan(t, config.App{Name: "x", Namespace: "apps"}, Options{}, docs)
	want := []string{
		"crds apiextensions.k8s.io/CustomResourceDefinition widgets.example.com",
		"namespaces Namespace aa",
		"namespaces Namespace zz",
		"cluster example.com/Widget w",
		"cluster rbac.authorization.k8s.io/ClusterRoleBinding crb",
		"cluster storage.k8s.io/StorageClass fast",
		"namespaced ConfigMap apps/a",
		"namespaced ConfigMap apps/b",
		"namespaced apps/Deployment other/a",
		"namespaced example.org/Gadget apps/g",
	}
	if diff := cmp.Diff(want, refs(plan)); diff != "" {
		t.Errorf("order (-want +got):\n%s", diff)
	}
	var warnings []string
	for _, w := range plan.Warnings {
		warnings = append(warnings, w.String())
	}
	wantWarn := []string{
		"example.org/Gadget apps/g (test.yaml#9): kind Gadget.example.org is not built in and no CustomResourceDefinition in this render defines it; assumed namespaced",
		"example.org/Gadget apps/g (test.yaml#9): no schema is known for this kind offline: the object cannot be split and its field set is approximate",
	}
	if diff := cmp.Diff(wantWarn, warnings); diff != "" {
		t.Errorf("warnings (-want +got):\n%s", diff)
	}
}

func TestMapperScope(t *testing.T) {
	gv := schema.GroupVersion{Group: "example.org", Version: "v1"}
	mapper := meta.NewDefaultRESTMapper([]schema.GroupVersion{gv})
	mapper.Add(gv.WithKind("Gadget"), meta.RESTScopeRoot)
	mapper.Add(schema.GroupVersion{Version: "v1"}.WithKind("ConfigMap"), meta.RESTScopeNamespace)
	app := config.App{Name: "x", Namespace: "apps"}
	plan := mustPlan(t, app, Options{Mapper: mapper}, "apiVersion: example.org/v1\nkind: Gadget\nmetadata: {name: g}\n---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
	if diff := cmp.Diff([]string{"cluster example.org/Gadget g", "namespaced ConfigMap apps/c"}, refs(plan)); diff != "" {
		t.Errorf("scope from the mapper (-want +got):\n%s", diff)
	}
	p, err := newFromConfig(app, Options{Mapper: mapper})
	if err != nil {
		t.Fatal(err)
	}
	_, err = p.Plan(context.Background(), decodeAll(t, "apiVersion: example.org/v1\nkind: Gizmo\nmetadata: {name: g}\n"))
	if err == nil || !strings.Contains(err.Error(), "the cluster does not serve example.org/v1 Gizmo") {
		t.Errorf("unknown kind with a mapper: error = %v", err)
	}
}

func TestStripAndWarn(t *testing.T) {
	docs := `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  creationTimestamp: "2024-01-01T00:00:00Z"
  generation: 4
spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: c, image: i}]}}}
status: {replicas: 3}
`
	plan := mustPlan(t, config.App{Name: "x", Namespace: "apps"}, Options{}, docs)
	d := plan.Objects[0].Desired.Object
	for _, f := range []string{"status"} {
		if _, ok := d[f]; ok {
			t.Errorf("%s was not stripped", f)
		}
	}
	md := d["metadata"].(map[string]any)
	for _, f := range []string{"creationTimestamp", "generation"} {
		if _, ok := md[f]; ok {
			t.Errorf("metadata.%s was not stripped", f)
		}
	}
	if len(plan.Warnings) != 3 {
		t.Errorf("want 3 warnings (creationTimestamp, generation, status), got %v", plan.Warnings)
	}
}

// TestNullLabelsAndAnnotations: "annotations:" and "labels:" with nothing
// under them (a chart's every line behind a false if) are null, which the
// API server reads as none: the plan declares neither map, so the labels
// and annotations syncd adds there are not drift.
func TestNullLabelsAndAnnotations(t *testing.T) {
	docs := `apiVersion: v1
kind: Service
metadata:
  name: kube-state-metrics
  labels:
  annotations:
spec: {ports: [{port: 8080}]}
`
	plan := mustPlan(t, config.App{Name: "x", Namespace: "apps"}, Options{}, docs)
	obj := plan.Objects[0]
	md := obj.Desired.Object["metadata"].(map[string]any)
	for _, f := range []string{"labels", "annotations"} {
		if _, ok := md[f]; ok {
			t.Errorf("metadata.%s: null was kept", f)
		}
		for _, s := range obj.Slices {
			if s.Fields.Has(fieldpath.MakePathOrDie("metadata", f)) {
				t.Errorf("slice of %s claims metadata.%s", s.Manager, f)
			}
		}
	}
	if len(plan.Warnings) != 0 {
		t.Errorf("warnings: %v, want none", plan.Warnings)
	}
}

func TestBareNamespace(t *testing.T) {
	plan := mustPlan(t, config.App{Name: "x", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "m", Paths: []string{".spec"}}}}}, Options{}, "apiVersion: v1\nkind: Namespace\nmetadata: {name: ns1}\n")
	s := plan.Objects[0].Slices
	if len(s) != 1 || s[0].Manager != "syncd-x" || !s[0].Fields.Empty() {
		t.Fatalf("want one identity-only slice for the default manager, got %+v", s)
	}
	if diff := cmp.Diff(map[string]any{"apiVersion": "v1", "kind": "Namespace", "metadata": map[string]any{"name": "ns1"}}, s[0].Object.Object); diff != "" {
		t.Errorf("slice (-want +got):\n%s", diff)
	}
}

// TestSlicesRebuildDesired checks, on every golden fixture, that merging
// the slices of an object gives back exactly the desired object, and that
// the slices' field sets cover the object's field set.
func TestSlicesRebuildDesired(t *testing.T) {
	for _, name := range []string{"plain", "kustomize", "split", "crds"} {
		t.Run(name, func(t *testing.T) {
			dir := filepath.Join("testdata", "plan", name)
			plan, err := planDir(t, dir, Options{})
			if err != nil {
				t.Fatal(err)
			}
			p, err := newFromConfig(loadApp(t, dir), Options{})
			if err != nil {
				t.Fatal(err)
			}
			crds := map[schema.GroupKind]*renderedCRD{}
			for _, o := range plan.Objects {
				if o.Ref.GroupKind() == crdGK {
					c, _ := parseCRD(o.Desired)
					crds[c.gk] = c
				}
			}
			cache := map[schema.GroupKind]managedfields.TypeConverter{}
			for _, o := range plan.Objects {
				want, _, _, err := p.toTyped(context.Background(), o.Desired, crds, cache, nil)
				if err != nil {
					t.Fatal(err)
				}
				wantSet, _ := want.ToFieldSet()
				merged := want.Empty()
				covered := fieldpath.NewSet()
				for _, s := range o.Slices {
					tv, _, _, err := p.toTyped(context.Background(), s.Object, crds, cache, nil)
					if err != nil {
						t.Fatalf("%s: slice of %s: %v", o.Ref, s.Manager, err)
					}
					if merged, err = merged.Merge(tv); err != nil {
						t.Fatal(err)
					}
					covered = covered.Union(s.Fields)
				}
				cmpr, err := want.Compare(merged)
				if err != nil {
					t.Fatal(err)
				}
				if !cmpr.IsSame() {
					t.Errorf("%s: merged slices differ from the desired object: %v", o.Ref, cmpr)
				}
				if missing := wantSet.Difference(identity).Difference(covered); !missing.Empty() {
					t.Errorf("%s: fields in no slice: %v", o.Ref, missing)
				}
			}
		})
	}
}

func TestMigrations(t *testing.T) {
	docs := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: d}
spec: {replicas: 2, selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: app, image: i}]}}}
`
	split := config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "syncd-web-release", Paths: []string{".spec.template.spec.containers[*].image"}}}}}
	whole := config.App{Name: "web"}
	renamed := config.App{Name: "web", AppSpec: config.AppSpec{Manager: "platform"}}
	image := `.spec.template.spec.containers[name="app"].image`
	tests := map[string]struct {
		prev, next config.App
		want       []string
	}{
		"no change": {split, split, nil},
		"split added": {whole, split, []string{
			"apps/Deployment d/web syncd-web -> syncd-web-release: " + image,
		}},
		"split removed": {split, whole, []string{
			"apps/Deployment d/web syncd-web-release -> syncd-web: " + image,
		}},
		"default manager renamed": {whole, renamed, []string{
			"apps/Deployment d/web syncd-web -> platform: " + strings.Join([]string{
				".spec.replicas", ".spec.selector", ".spec.template.metadata.labels.a",
				`.spec.template.spec.containers[name="app"]`, `.spec.template.spec.containers[name="app"].image`,
				`.spec.template.spec.containers[name="app"].name`}, " "),
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			prev := mustPlan(t, tc.prev, Options{}, docs)
			next := mustPlan(t, tc.next, Options{}, docs)
			var got []string
			for _, m := range Migrations(prev, next) {
				var ps []string
				m.Fields.Iterate(func(p fieldpath.Path) { ps = append(ps, p.String()) })
				got = append(got, fmt.Sprintf("%s %s -> %s: %s", m.Ref, m.From, m.To, strings.Join(ps, " ")))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Migrations (-want +got):\n%s", diff)
			}
		})
	}
}

func TestWriteOutputs(t *testing.T) {
	plan := mustPlan(t, config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "syncd-web-release", Paths: []string{".spec.template.spec.containers[*].image"}}}}}, Options{}, `apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: d}
spec: {selector: {matchLabels: {a: b}}, template: {metadata: {labels: {a: b}}, spec: {containers: [{name: app, image: i}]}}}
---
apiVersion: v1
kind: Secret
metadata: {name: s, namespace: d}
stringData: {password: hunter2}
data: {token: aHVudGVyMg==}
`)
	var y bytes.Buffer
	if err := plan.WriteYAML(&y); err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		"# manager: syncd-web  object: apps/Deployment d/web\n",
		"# manager: syncd-web-release  object: apps/Deployment d/web\n",
		"# manager: syncd-web  object: Secret d/s\n",
	} {
		if !strings.Contains(y.String(), want) {
			t.Errorf("YAML output lacks %q:\n%s", want, y.String())
		}
	}
	var j bytes.Buffer
	if err := plan.WriteJSON(&j); err != nil {
		t.Fatal(err)
	}
	for name, out := range map[string]string{"yaml": y.String(), "json": j.String()} {
		if strings.Contains(out, "hunter2") || strings.Contains(out, "aHVudGVyMg==") {
			t.Errorf("%s output prints a Secret value:\n%s", name, out)
		}
	}
	if !strings.Contains(j.String(), `"manager": "syncd-web-release"`) {
		t.Errorf("JSON output lacks the release slice:\n%s", j.String())
	}
	checkPrintedHashes(t, plan, j.Bytes())
}

// checkPrintedHashes checks that each slice WriteJSON printed carries the
// hash of what it printed: the plan's own hash where nothing is hidden,
// never the hash of a hidden value (a digest a guess could be checked
// against).
func checkPrintedHashes(t *testing.T, plan *Plan, out []byte) {
	t.Helper()
	var doc PlanJSON
	if err := json.Unmarshal(out, &doc); err != nil {
		t.Fatal(err)
	}
	real := map[string]string{}
	for _, o := range plan.Objects {
		for _, s := range o.Slices {
			real[string(s.Manager)+" "+o.Ref.String()] = s.Hash
		}
	}
	for _, s := range doc.Slices {
		b, err := json.Marshal(s.ApplyConfiguration)
		if err != nil {
			t.Fatal(err)
		}
		sum := sha256.Sum256(b)
		if got, want := s.Hash, hex.EncodeToString(sum[:]); got != want {
			t.Errorf("%s %s: hash %s, not the hash of what is printed (%s)", s.Manager, s.Object, got, want)
		}
		var shown bytes.Buffer
		enc := json.NewEncoder(&shown)
		enc.SetEscapeHTML(false)
		if err := enc.Encode(s.ApplyConfiguration); err != nil {
			t.Fatal(err)
		}
		hidden := strings.Contains(shown.String(), redact.Marker)
		if same := s.Hash == real[string(s.Manager)+" "+s.Object]; same == hidden {
			t.Errorf("%s %s: hash equal to the real slice's: %v, with values hidden: %v", s.Manager, s.Object, same, hidden)
		}
	}
}

func TestResliceDeduced(t *testing.T) {
	plan := mustPlan(t, config.App{Name: "x", Namespace: "apps"}, Options{}, "apiVersion: example.org/v1\nkind: Gadget\nmetadata: {name: g}\nspec: {size: 3, parts: {a: 1}}\n")
	o := &plan.Objects[0]
	whole, err := o.Reslice("other", o.Slices[0].Fields)
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(o.Desired.Object, whole.Object.Object); diff != "" {
		t.Errorf("full reslice (-want +got):\n%s", diff)
	}
	empty, err := o.Reslice("other", fieldpath.NewSet())
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := empty.Object.Object["spec"]; ok || !empty.Fields.Empty() {
		t.Errorf("empty reslice carries fields: %v", empty.Object.Object)
	}
	if _, err := o.Reslice("other", fieldpath.NewSet(fieldpath.MakePathOrDie("spec", "size"))); err == nil {
		t.Errorf("a partial reslice of a schemaless object did not fail")
	}
}

func TestResliceKeepsKeys(t *testing.T) {
	plan := mustPlan(t, config.App{Name: "x", Namespace: "apps"}, Options{}, deployment)
	o := &plan.Objects[0]
	image := fieldpath.MakePathOrDie("spec", "template", "spec", "containers", fieldpath.KeyByFields("name", "app"), "image")
	s, err := o.Reslice("release", fieldpath.NewSet(image))
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]any{"apiVersion": "apps/v1", "kind": "Deployment", "metadata": map[string]any{"name": "web", "namespace": "apps"},
		"spec": map[string]any{"template": map[string]any{"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx:1"}}}}}}
	if diff := cmp.Diff(want, s.Object.Object); diff != "" {
		t.Errorf("reslice (-want +got):\n%s", diff)
	}
}

// TestOrderIndependent checks that the plan does not depend on the order
// manifests come in: reversed input gives the same objects, slices and
// hashes.
func TestOrderIndependent(t *testing.T) {
	dir := filepath.Join("testdata", "plan", "split")
	ms, err := Render(context.Background(), Tree{Dir: filepath.Join(dir, "manifests")})
	if err != nil {
		t.Fatal(err)
	}
	more := decodeAll(t, "apiVersion: v1\nkind: Namespace\nmetadata: {name: default}\n---\n"+configMap)
	ms = append(ms, more...)
	reversed := make([]Manifest, len(ms))
	for i, m := range ms {
		reversed[len(ms)-1-i] = m
	}
	p, err := newFromConfig(loadApp(t, dir), Options{})
	if err != nil {
		t.Fatal(err)
	}
	a, err := p.Plan(context.Background(), ms)
	if err != nil {
		t.Fatal(err)
	}
	b, err := p.Plan(context.Background(), reversed)
	if err != nil {
		t.Fatal(err)
	}
	summary := func(plan *Plan) []string {
		var out []string
		for _, o := range plan.Objects {
			for _, s := range o.Slices {
				out = append(out, fmt.Sprintf("%s %s %s %s", o.Stage, o.Ref, s.Manager, s.Hash))
			}
		}
		return out
	}
	if diff := cmp.Diff(summary(a), summary(b)); diff != "" {
		t.Errorf("plans differ with reversed input (-in order +reversed):\n%s", diff)
	}
}
