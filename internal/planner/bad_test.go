package planner

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"runtime"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/config"
)

// writeTree creates files (path -> content) below a new temp dir. A
// content starting with "symlink:" makes a symlink to the rest.
func writeTree(t testing.TB, files map[string]string) string {
	t.Helper()
	dir := t.TempDir()
	for name, content := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if target, ok := strings.CutPrefix(content, "symlink:"); ok {
			if err := os.Symlink(target, p); err != nil {
				t.Fatal(err)
			}
			continue
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	return dir
}

const deployment = `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers:
      - name: app
        image: nginx:1
        args: [a, b]
`

const configMap = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {a: b}\n"

func TestBadInputs(t *testing.T) {
	outside := writeTree(t, map[string]string{"secret.yaml": configMap})
	defaultApp := config.App{Name: "web", Namespace: "default"}
	tests := map[string]struct {
		files map[string]string
		app   *config.App
		// want are substrings the error must contain.
		want []string
		// hide is a value the error must not show.
		hide string
	}{
		"invalid YAML": {
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: [\n"},
			want:  []string{"a.yaml: document 1", "invalid YAML"},
		},
		// What the YAML decoder quotes of a document may be a secret's
		// value (a password starting with "*" reads as an alias); a key
		// it names stays, to find the line by.
		"invalid YAML quoting a value": {
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: *pw-Zq81xK\n"},
			want:  []string{"a.yaml: document 1", "unknown anchor <redacted> referenced", "withheld"},
			hide:  "pw-Zq81xK",
		},
		"invalid YAML quoting a value and its tag": {
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: Secret\nmetadata: {name: s}\nstringData:\n  password: !!float pw-Zq81xK\n"},
			want:  []string{"a.yaml: document 1", "cannot decode !!str <redacted> as a !!float"},
			hide:  "pw-Zq81xK",
		},
		"key given twice": {
			files: map[string]string{"a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: s}\ndata:\n  color: red\n  color: blue\n"},
			want:  []string{"a.yaml: document 1", `key "color" already set in map`},
			hide:  "blue",
		},
		"document without kind": {
			files: map[string]string{"a.yaml": configMap + "---\napiVersion: v1\nmetadata: {name: x}\n"},
			want:  []string{"a.yaml: document 2", "kind is missing"},
		},
		"document without apiVersion": {
			files: map[string]string{"a.yaml": configMap + "---\nkind: ConfigMap\nmetadata: {name: x}\n"},
			want:  []string{"a.yaml: document 2", "apiVersion is missing"},
		},
		"document without metadata.name": {
			files: map[string]string{"a.yaml": configMap + "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {labels: {a: b}}\n"},
			want:  []string{"a.yaml: document 2", "metadata.name is missing"},
		},
		"duplicate object": {
			files: map[string]string{"a.yaml": configMap, "sub/b.yaml": strings.Replace(configMap, "{name: cm}", "{name: cm, namespace: default}", 1)},
			want:  []string{"sub/b.yaml: document 1", "duplicate object ConfigMap default/cm", "a.yaml#1"},
		},
		"managedFields in Git": {
			files: map[string]string{"a.yaml": strings.Replace(configMap, "{name: cm}", "{name: cm, managedFields: [{manager: kubectl}]}", 1)},
			want:  []string{"a.yaml: document 1", "metadata.managedFields must not be in Git"},
		},
		"resourceVersion in Git": {
			files: map[string]string{"a.yaml": strings.Replace(configMap, "{name: cm}", "{name: cm, resourceVersion: \"42\"}", 1)},
			want:  []string{"a.yaml: document 1", "metadata.resourceVersion must not be in Git"},
		},
		"uid in Git": {
			files: map[string]string{"a.yaml": strings.Replace(configMap, "{name: cm}", "{name: cm, uid: 0b7c}", 1)},
			want:  []string{"metadata.uid must not be in Git"},
		},
		"unknown field of a built-in kind": {
			files: map[string]string{"a.yaml": strings.Replace(configMap, "\ndata:", "\ndatta:", 1)},
			want:  []string{"a.yaml: document 1", "does not match the schema of v1 ConfigMap", "datta"},
		},
		// What the API server's apply refuses whatever its fieldValidation
		// (an undeclared field, above, and a list entry given twice) is
		// refused here, before any request, for every kind with a schema.
		"list entry given twice in a built-in kind": {
			files: map[string]string{"a.yaml": deployment + "      - name: app\n        image: nginx:2\n"},
			want:  []string{"a.yaml: document 1", "does not match the schema of apps/v1 Deployment", "duplicate entries for key", `name="app"`},
		},
		"cluster-scoped object with a namespace": {
			files: map[string]string{"a.yaml": "apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata: {name: r, namespace: default}\n"},
			want:  []string{"a.yaml: document 1", "ClusterRole is cluster-scoped but sets metadata.namespace"},
		},
		"namespaced object without any namespace": {
			files: map[string]string{"a.yaml": configMap},
			app:   &config.App{Name: "web"},
			want:  []string{"ConfigMap is namespaced and has no metadata.namespace"},
		},
		"kustomization with an exec plugin": {
			files: map[string]string{
				"kustomization.yaml": "resources: [cm.yaml]\ntransformers: [plugin.yaml]\n",
				"cm.yaml":            configMap,
				"plugin.yaml":        "apiVersion: someteam.example.com/v1\nkind: SedTransformer\nmetadata: {name: sed}\nargsOneLiner: s/a/b/\n",
			},
			want: []string{`kustomization.yaml: transformers[0]: "plugin.yaml": SedTransformer`, "not a kustomize built-in"},
		},
		"exec plugin config produced by a kustomization directory": {
			files: map[string]string{
				"kustomization.yaml":         "resources: [cm.yaml]\ntransformers: [plugins]\n",
				"cm.yaml":                    configMap,
				"plugins/kustomization.yaml": "resources: [sed.yaml]\n",
				"plugins/sed.yaml":           "apiVersion: someteam.example.com/v1\nkind: SedTransformer\nmetadata: {name: sed}\nargsOneLiner: s/a/b/\n",
			},
			want: []string{"kustomization.yaml: kustomize build", "SedTransformer"},
		},
		"kustomization with a KRM exec function": {
			files: map[string]string{
				"kustomization.yaml": "generators: [gen.yaml]\n",
				"gen.yaml":           "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: gen\n  annotations:\n    config.kubernetes.io/function: |\n      exec: {path: ./gen.sh}\n",
			},
			want: []string{"kustomization.yaml: generators", "KRM function"},
		},
		"kustomization below a plain directory": {
			files: map[string]string{"a.yaml": configMap, "overlay/kustomization.yaml": "resources: [../a.yaml]\n"},
			want:  []string{"overlay/kustomization.yaml: a kustomization below a plain manifest directory is not built"},
		},
		"kustomization with Helm": {
			files: map[string]string{"kustomization.yaml": "helmCharts:\n- name: nginx\n  repo: https://charts.example.com\n"},
			want:  []string{"kustomization.yaml: helmCharts", "Helm chart inflation is disabled"},
		},
		"remote base": {
			files: map[string]string{"kustomization.yaml": "resources:\n- github.com/example/app//deploy?ref=v1.0.0\n"},
			want:  []string{"kustomization.yaml: resources", "remote reference", "github.com/example/app"},
		},
		"remote URL resource": {
			files: map[string]string{"overlay/kustomization.yaml": "resources: [https://example.com/app.yaml]\n", "kustomization.yaml": "resources: [overlay]\n"},
			want:  []string{"overlay/kustomization.yaml: resources", "remote reference"},
		},
		"resource out of the tree": {
			files: map[string]string{"kustomization.yaml": "resources: [../base]\n"},
			want:  []string{"kustomization.yaml: resources", `resources[0]: "../base" leaves the repository`},
		},
		"missing resource": {
			files: map[string]string{"kustomization.yaml": "resources: [deploy.yaml]\n"},
			want:  []string{"kustomization.yaml: resources", `"deploy.yaml" does not exist`},
		},
		"kustomization cycle": {
			files: map[string]string{
				"kustomization.yaml":   "resources: [a]\n",
				"a/kustomization.yaml": "resources: [../b]\n",
				"b/kustomization.yaml": "resources: [../a]\n",
			},
			want: []string{"kustomizations form a cycle", "a/kustomization.yaml -> b/kustomization.yaml -> a/kustomization.yaml"},
		},
		"symlink out of the tree": {
			files: map[string]string{"a.yaml": configMap, "leak.yaml": "symlink:" + filepath.Join(outside, "secret.yaml")},
			want:  []string{"leak.yaml: symlink leads out of the app directory"},
		},
		"symlink out of a kustomization": {
			files: map[string]string{"kustomization.yaml": "resources: [leak.yaml]\n", "leak.yaml": "symlink:" + filepath.Join(outside, "secret.yaml")},
			want:  []string{`resources[0]: "leak.yaml" leads out of the repository through a symlink`},
		},
		"kustomize build error names the file": {
			files: map[string]string{"kustomization.yaml": "resources: [cm.yaml]\npatches:\n- path: patch.yaml\n", "cm.yaml": configMap,
				"patch.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: no-such-map}\ndata: {a: b}\n"},
			want: []string{"kustomization.yaml: kustomize build", "no-such-map"},
		},
		"split path into an atomic list": {
			files: map[string]string{"a.yaml": deployment},
			app: &config.App{
				Name: "web", Namespace: "default",
				AppSpec: config.AppSpec{
					Split: []config.SplitRule{
						{Manager: "args", Paths: []string{".spec.template.spec.containers[*].args[0]"}},
					},
				},
			},
			want: []string{"a.yaml: document 1", `split[0] (manager args): path .spec.template.spec.containers[*].args[0] reaches inside .spec.template.spec.containers[name="app"].args, which is atomic`},
		},
		"split path into a CRD's atomic list": {
			files: map[string]string{
				"crd.yaml":   readTestdata(t, "testdata/plan/crds/manifests/crd.yaml"),
				"route.yaml": readTestdata(t, "testdata/plan/crds/manifests/route.yaml"),
			},
			app: &config.App{
				Name: "routes", Namespace: "edge",
				AppSpec: config.AppSpec{
					Split: []config.SplitRule{
						{Manager: "syncd-routes-hosts", Kinds: []string{"example.com/Route"}, Paths: []string{".spec.hosts[0]"}},
					},
				},
			},
			want: []string{"route.yaml: document 1", `split[0] (manager syncd-routes-hosts): path .spec.hosts[0] reaches inside .spec.hosts, which is atomic`},
		},
		"split path into an atomic map": {
			files: map[string]string{"a.yaml": deployment},
			app: &config.App{
				Name: "web", Namespace: "default",
				AppSpec: config.AppSpec{
					Split: []config.SplitRule{
						{Manager: "sel", Paths: []string{".spec.selector.matchLabels"}},
					},
				},
			},
			want: []string{"path .spec.selector.matchLabels reaches inside .spec.selector, which is atomic"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, tc.files)
			app := defaultApp
			if tc.app != nil {
				app = *tc.app
			}
			plan, err := renderAndPlan(dir, app, Options{})
			if err == nil {
				t.Fatalf("no error; plan has %d objects", len(plan.Objects))
			}
			if plan != nil {
				t.Errorf("a plan came back with the error")
			}
			var me ManifestErrors
			if !errors.As(err, &me) {
				t.Errorf("error is %T, want ManifestErrors", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if tc.hide != "" && strings.Contains(err.Error(), tc.hide) {
				t.Errorf("error shows %q:\n%v", tc.hide, err)
			}
		})
	}
}

func readTestdata(t *testing.T, name string) string {
	t.Helper()
	data, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

func renderAndPlan(dir string, app config.App, opts Options) (*Plan, error) {
	ms, err := Render(context.Background(), Tree{Dir: dir})
	if err != nil {
		return nil, err
	}
	p, err := newFromConfig(app, opts)
	if err != nil {
		return nil, err
	}
	return p.Plan(context.Background(), ms)
}

// TestHugeFile checks that a 50 MB file is refused before it is read: the
// memory allocated while rendering stays far below the file's size.
func TestHugeFile(t *testing.T) {
	for _, kustomize := range []bool{false, true} {
		name := "plain"
		files := map[string]string{"a.yaml": configMap}
		if kustomize {
			name = "kustomize"
			files["kustomization.yaml"] = "resources: [a.yaml, huge.yaml]\n"
		}
		t.Run(name, func(t *testing.T) {
			dir := writeTree(t, files)
			f, err := os.Create(filepath.Join(dir, "huge.yaml"))
			if err != nil {
				t.Fatal(err)
			}
			if err := f.Truncate(50 << 20); err != nil { // sparse: cheap to make
				t.Fatal(err)
			}
			f.Close()
			var before, after runtime.MemStats
			runtime.GC()
			runtime.ReadMemStats(&before)
			_, err = Render(context.Background(), Tree{Dir: dir})
			runtime.ReadMemStats(&after)
			if err == nil || !strings.Contains(err.Error(), "huge.yaml: file is larger than the 8 MiB limit") {
				t.Fatalf("error = %v, want huge.yaml refused for its size", err)
			}
			if alloc := after.TotalAlloc - before.TotalAlloc; alloc > 16<<20 {
				t.Errorf("rendering allocated %d bytes; the huge file was read", alloc)
			}
		})
	}
}

func TestNewErrors(t *testing.T) {
	tests := map[string]struct {
		app  config.App
		want string
	}{
		"no name": {config.App{}, "app: name is empty"},
		"bad path": {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "m", Paths: []string{".spec", ".spec.containers[name=app]"}}}}},
			`app "web": split[0]: paths[1]: field path ".spec.containers[name=app]": at position 22`},
		"default manager in split": {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "syncd-web", Paths: []string{".spec"}}}}},
			`app "web": split[0]: manager "syncd-web" is the app's default manager`},
		"no paths":   {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "m"}}}}, `app "web": split[0] (manager m): paths is empty`},
		"no manager": {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Paths: []string{".spec"}}}}}, `app "web": split[0]: manager: empty field manager name`},
		"bad kind":   {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "m", Kinds: []string{"apps/deployment"}, Paths: []string{".spec"}}}}}, `split[0]: kinds[0] "apps/deployment": kind "deployment" must start with a capital letter`},
		"identity":   {config.App{Name: "web", AppSpec: config.AppSpec{Split: []config.SplitRule{{Manager: "m", Paths: []string{".metadata"}}}}}, `split[0]: paths[0] ".metadata": apiVersion, kind, metadata.name and metadata.namespace identify the object`},
		"long manager": {config.App{Name: "web", AppSpec: config.AppSpec{Manager: strings.Repeat("m", 129)}},
			`app "web": manager: field manager "mmm`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := newFromConfig(tc.app, Options{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New() error = %v, want it to contain %q", err, tc.want)
			}
		})
	}
}
