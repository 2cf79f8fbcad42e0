package install

import (
	"bytes"
	"context"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
)

// loadExampleApp loads examples/syncd.yaml and returns its app "web".
func loadExampleApp(t *testing.T) config.App {
	t.Helper()
	cfg, err := config.Load(repoPath("examples/syncd.yaml"))
	if err != nil {
		t.Fatalf("examples/syncd.yaml: %v", err)
	}
	for _, a := range cfg.Apps {
		if a.Name == "web" {
			return a
		}
	}
	t.Fatal("examples/syncd.yaml: no app web")
	return config.App{}
}

func planDir(t *testing.T, app config.App, dir string) *planner.Plan {
	t.Helper()
	tree, err := planner.LocalTree(repoPath(dir))
	if err != nil {
		t.Fatal(err)
	}
	manifests, err := planner.Render(context.Background(), tree)
	if err != nil {
		t.Fatalf("render %s: %v", dir, err)
	}
	spec, err := reconcile.Compile(app)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.New(spec.Planner, planner.Options{Revision: dir})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), manifests)
	if err != nil {
		t.Fatalf("plan %s: %v", dir, err)
	}
	return plan
}

// planShape is "ref: manager manager ..." per object, in apply order.
func planShape(plan *planner.Plan) []string {
	var out []string
	for _, o := range plan.Objects {
		line := o.Ref.String() + ":"
		for _, s := range o.Slices {
			line += " " + string(s.Manager)
		}
		out = append(out, line)
	}
	return out
}

func TestExampleConfigLoads(t *testing.T) {
	app := loadExampleApp(t)
	if diff := cmp.Diff([]string{"syncd-web", "syncd-web-release"}, app.Managers()); diff != "" {
		t.Errorf("managers (-want +got):\n%s", diff)
	}
	if app.Path != "examples/app" {
		t.Errorf("path: got %q, want examples/app (the entry kustomization)", app.Path)
	}
}

func TestExamplePlans(t *testing.T) {
	app := loadExampleApp(t)
	tests := map[string]struct {
		dir   string
		shape []string
		// checks run on the desired objects by "Kind name".
		checks func(t *testing.T, objs map[string]*unstructured.Unstructured)
	}{
		"base": {
			dir: "examples/app/base",
			shape: []string{
				"Namespace web: syncd-web",
				"ConfigMap web/web-settings: syncd-web",
				"Service web/web: syncd-web",
				"apps/Deployment web/web: syncd-web syncd-web-release",
				"autoscaling/HorizontalPodAutoscaler web/web: syncd-web",
			},
			checks: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				wantInt(t, objs["HorizontalPodAutoscaler web"], 5, "spec", "maxReplicas")
			},
		},
		"prod overlay (the app's path)": {
			dir: "examples/app",
			shape: []string{
				"Namespace web: syncd-web",
				"ConfigMap web/web-env-*: syncd-web",
				"ConfigMap web/web-settings: syncd-web",
				"Service web/web: syncd-web",
				"apps/Deployment web/web: syncd-web syncd-web-release",
				"autoscaling/HorizontalPodAutoscaler web/web: syncd-web",
			},
			checks: func(t *testing.T, objs map[string]*unstructured.Unstructured) {
				wantInt(t, objs["HorizontalPodAutoscaler web"], 10, "spec", "maxReplicas")
				d := objs["Deployment web"]
				ctr := container(t, d)
				cpu, _, _ := unstructured.NestedString(ctr, "resources", "requests", "cpu")
				if cpu != "200m" {
					t.Errorf("Deployment web: cpu request %q, want the prod patch's 200m", cpu)
				}
				// The generated ConfigMap's hashed name is what the
				// Deployment refers to.
				var generated string
				for k := range objs {
					if name, ok := strings.CutPrefix(k, "ConfigMap "); ok && strings.HasPrefix(name, "web-env-") {
						generated = name
					}
				}
				refs := []string{}
				envFrom, _, _ := unstructured.NestedSlice(ctr, "envFrom")
				for _, e := range envFrom {
					n, _, _ := unstructured.NestedString(e.(map[string]any), "configMapRef", "name")
					refs = append(refs, n)
				}
				if diff := cmp.Diff([]string{"web-settings", generated}, refs); diff != "" {
					t.Errorf("Deployment web envFrom (-want +got):\n%s", diff)
				}
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			plan := planDir(t, app, tc.dir)
			got := planShape(plan)
			for i, line := range got {
				if strings.HasPrefix(line, "ConfigMap web/web-env-") {
					got[i] = "ConfigMap web/web-env-*:" + strings.SplitN(line, ":", 2)[1]
				}
			}
			if diff := cmp.Diff(tc.shape, got); diff != "" {
				t.Errorf("objects and slices (-want +got):\n%s", diff)
			}
			objs := map[string]*unstructured.Unstructured{}
			for _, o := range plan.Objects {
				objs[o.Ref.Kind+" "+o.Ref.Name] = o.Desired
				if o.Ref.Kind != "Deployment" {
					continue
				}
				// The release manager owns the image and only the image;
				// the platform's slice has no image.
				for _, s := range o.Slices {
					ctr := container(t, s.Object)
					img, hasImage, _ := unstructured.NestedString(ctr, "image")
					switch s.Manager {
					case "syncd-web-release":
						if img != "nginx:1.27" {
							t.Errorf("release slice image: got %q, want nginx:1.27", img)
						}
						if diff := cmp.Diff([]string{"image", "name"}, sortedKeys(ctr)); diff != "" {
							t.Errorf("release slice container fields (-want +got):\n%s", diff)
						}
					case "syncd-web":
						if hasImage {
							t.Errorf("platform slice holds the image %q", img)
						}
					}
				}
			}
			tc.checks(t, objs)
		})
	}
}

// TestExampleAppliesAsPlanned installs manifests/, then applies the prod
// plan for real with syncd's applier as the ServiceAccount syncd (the
// install's own identity, under the app's conflict policy), and checks
// that the API server records for each manager exactly the fields the
// plan gave it.
func TestExampleAppliesAsPlanned(t *testing.T) {
	installBase(t)
	app := loadExampleApp(t)
	plan := planDir(t, app, "examples/app")
	ctx := context.Background()
	_, _, sa := saClients(t, "syncd-system", "syncd")
	a, err := applier.New(sa.dyn, sa.mapper, applier.Options{})
	if err != nil {
		t.Fatal(err)
	}
	ao, err := reconcile.ApplyOptions(app)
	if err != nil {
		t.Fatal(err)
	}
	cs, err := a.Apply(ctx, plan, applier.ApplyOptions{Policy: ao.Policy})
	if err != nil {
		t.Fatal(err)
	}
	if !cs.OK() {
		for _, ch := range cs.Changes {
			t.Logf("%+v", ch)
		}
		t.Fatalf("apply of examples/app as syncd-system/syncd did not succeed")
	}
	c := newCluster(t, env.Config)
	for _, o := range plan.Objects {
		if o.Ref.Kind != "Deployment" {
			continue
		}
		ri, err := c.resource(o.Desired)
		if err != nil {
			t.Fatal(err)
		}
		live, err := ri.Get(ctx, o.Ref.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		got := map[string]*fieldpath.Set{}
		for _, mf := range live.GetManagedFields() {
			set := &fieldpath.Set{}
			if err := set.FromJSON(bytes.NewReader(mf.FieldsV1.Raw)); err != nil {
				t.Fatal(err)
			}
			got[mf.Manager] = set
		}
		for _, s := range o.Slices {
			g := got[string(s.Manager)]
			if g == nil {
				t.Errorf("%s: no managedFields entry for %s", o.Ref, s.Manager)
				continue
			}
			if !g.Equals(s.Fields) {
				t.Errorf("%s: %s owns\n%s\nwant\n%s", o.Ref, s.Manager, g, s.Fields)
			}
		}
		image := fieldpath.MakePathOrDie("spec", "template", "spec", "containers",
			fieldpath.KeyByFields("name", "app"), "image")
		if !got["syncd-web-release"].Has(image) || got["syncd-web"].Has(image) {
			t.Errorf("%s: the image is not owned by syncd-web-release alone", o.Ref)
		}
	}
}

// TestPlainExampleStillPlans keeps examples/plain (the demo's directory)
// valid, and its comment true: under the web app's rules its Deployment's
// image goes to syncd-web-release.
func TestPlainExampleStillPlans(t *testing.T) {
	app := loadExampleApp(t)
	plan := planDir(t, app, "examples/plain")
	want := []string{
		"Namespace demo: syncd-web",
		"ConfigMap demo/web-settings: syncd-web",
		"Service demo/web: syncd-web",
		"apps/Deployment demo/web: syncd-web syncd-web-release",
	}
	if diff := cmp.Diff(want, planShape(plan)); diff != "" {
		t.Errorf("examples/plain (-want +got):\n%s", diff)
	}
}

func container(t *testing.T, obj *unstructured.Unstructured) map[string]any {
	t.Helper()
	ctrs, _, _ := unstructured.NestedSlice(obj.Object, "spec", "template", "spec", "containers")
	if len(ctrs) != 1 {
		t.Fatalf("%s: %d containers, want 1", obj.GetName(), len(ctrs))
	}
	return ctrs[0].(map[string]any)
}

func wantInt(t *testing.T, obj *unstructured.Unstructured, want int64, path ...string) {
	t.Helper()
	got, _, _ := unstructured.NestedInt64(obj.Object, path...)
	if got != want {
		t.Errorf("%s %s: %s = %d, want %d", obj.GetKind(), obj.GetName(), strings.Join(path, "."), got, want)
	}
}

func sortedKeys(m map[string]any) []string {
	var out []string
	for k := range m {
		out = append(out, k)
	}
	sort.Strings(out)
	return out
}

// TestExampleChartRenders renders examples/chart as examples/helm.yaml
// configures it, without a cluster: the hook first, the values file and
// inline values applied, no ServiceMonitor (Helm's default capabilities
// do not serve it).
func TestExampleChartRenders(t *testing.T) {
	cfg, err := config.Load(repoPath("examples/helm.yaml"))
	if err != nil {
		t.Fatalf("examples/helm.yaml: %v", err)
	}
	app := cfg.Apps[0]
	tree, err := planner.LocalTree(repoPath(app.Path))
	if err != nil {
		t.Fatal(err)
	}
	if tree.Helm, err = reconcile.HelmOptions(app, tree.Dir); err != nil {
		t.Fatal(err)
	}
	manifests, err := planner.Render(context.Background(), tree)
	if err != nil {
		t.Fatalf("render %s: %v", app.Path, err)
	}
	spec, err := reconcile.Compile(app)
	if err != nil {
		t.Fatal(err)
	}
	p, err := planner.New(spec.Planner, planner.Options{Revision: "examples"})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := p.Plan(context.Background(), manifests)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"ConfigMap web/web-schema: syncd-web-chart", "ConfigMap web/web-settings: syncd-web-chart", "apps/Deployment web/web: syncd-web-chart"}
	if diff := cmp.Diff(want, planShape(plan)); diff != "" {
		t.Errorf("plan (-want +got):\n%s", diff)
	}
	for _, o := range plan.Objects {
		if o.Ref.Name == "web-settings" {
			if got, _, _ := unstructured.NestedString(o.Desired.Object, "data", "greeting"); got != "hello from prod" {
				t.Errorf("greeting = %q, want the values file's", got)
			}
		}
		if o.Ref.Kind == "Deployment" {
			c, _, _ := unstructured.NestedSlice(o.Desired.Object, "spec", "template", "spec", "containers")
			if img := c[0].(map[string]any)["image"]; img != "nginx:1.27.1" {
				t.Errorf("image = %v, want the inline tag", img)
			}
		}
	}
}
