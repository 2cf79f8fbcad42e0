package planner

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

const testChartYAML = "apiVersion: v2\nname: web\nversion: 1.0.0\n"

// testChart is a small chart of our own: a ConfigMap from values, a
// Secret from values, hooks of every kind, a NOTES.txt and a partial.
func testChart() map[string]string {
	return map[string]string{
		"chart/Chart.yaml":             testChartYAML,
		"chart/values.yaml":            "greeting: hello\nreplicas: 1\npassword: changeme\n",
		"chart/templates/_helpers.tpl": `{{- define "web.name" -}}{{ .Release.Name }}-web{{- end -}}`,
		"chart/templates/NOTES.txt":    "Thanks for installing {{ .Release.Name }}",
		"chart/templates/config.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ include "web.name" . }}
  namespace: {{ .Release.Namespace }}
data:
  greeting: {{ .Values.greeting | quote }}
  kube: {{ .Capabilities.KubeVersion.Version | quote }}
`,
		"chart/templates/secret.yaml": `apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-pw
stringData:
  password: {{ .Values.password | quote }}
`,
		"chart/templates/hooks.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: pre
  annotations:
    helm.sh/hook: pre-install,pre-upgrade
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: post
  annotations:
    helm.sh/hook: post-install
---
apiVersion: v1
kind: Pod
metadata:
  name: test
  annotations:
    helm.sh/hook: test
spec:
  containers: [{name: t, image: busybox}]
---
apiVersion: v1
kind: ConfigMap
metadata:
  name: on-delete
  annotations:
    helm.sh/hook: pre-delete
`,
		"chart/crds/widgets.yaml": `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: widgets.example.com
spec:
  group: example.com
  names: {kind: Widget, plural: widgets}
  scope: Namespaced
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object}
`,
	}
}

func renderTestChart(t *testing.T, files map[string]string, opts HelmOptions) ([]Manifest, error) {
	t.Helper()
	root := writeTree(t, files)
	if opts.ReleaseName == "" {
		opts.ReleaseName = "demo"
	}
	if opts.ValuesRoot != "" && !filepath.IsAbs(opts.ValuesRoot) {
		opts.ValuesRoot = filepath.Join(root, opts.ValuesRoot)
	}
	return Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, "chart"), Helm: opts})
}

// hookSummary is summary with each object's hook.
func hookSummary(ms []Manifest) []string {
	var out []string
	for i, s := range summary(ms) {
		switch ms[i].Hook {
		case HookBefore:
			s += " (before)"
		case HookAfter:
			s += " (after)"
		}
		out = append(out, s)
	}
	return out
}

func TestRenderChart(t *testing.T) {
	ms, err := renderTestChart(t, testChart(), HelmOptions{Namespace: "shop"})
	if err != nil {
		t.Fatal(err)
	}
	want := []string{
		"chart/crds/widgets.yaml CustomResourceDefinition widgets.example.com",
		"chart/templates/config.yaml ConfigMap shop/demo-web",
		"chart/templates/hooks.yaml ConfigMap pre (before)",
		"chart/templates/hooks.yaml ConfigMap post (after)",
		"chart/templates/secret.yaml Secret demo-pw",
	}
	if diff := cmp.Diff(want, hookSummary(ms)); diff != "" {
		t.Errorf("rendered (-want +got):\n%s", diff)
	}
	if got := fieldOf(ms, "ConfigMap", "demo-web", "data", "kube"); got != DefaultHelmCapabilities().KubeVersion {
		t.Errorf("kube version = %q, want the default %q", got, DefaultHelmCapabilities().KubeVersion)
	}
}

func TestRenderChartValues(t *testing.T) {
	files := testChart()
	files["deploy/base.yaml"] = "greeting: from-base\nnested: {a: 1, b: 2}\n"
	files["deploy/prod.yaml"] = "greeting: from-prod\n"
	tests := map[string]struct {
		opts HelmOptions
		want string
	}{
		"chart defaults":            {HelmOptions{}, "hello"},
		"later values files win":    {HelmOptions{ValuesFiles: []string{"deploy/base.yaml", "deploy/prod.yaml"}}, "from-prod"},
		"inline values win":         {HelmOptions{ValuesFiles: []string{"deploy/prod.yaml"}, Values: map[string]any{"greeting": "inline"}}, "inline"},
		"release name in a partial": {HelmOptions{ReleaseName: "other", Values: map[string]any{"greeting": "x"}}, "x"},
		"values root: the chart":    {HelmOptions{ValuesRoot: "chart", ValuesFiles: []string{"values-production.yaml"}}, "from-package"},
		"values root: another tree": {HelmOptions{ValuesRoot: "values-repo", ValuesFiles: []string{"apps/web/prod.yaml", "apps/web/eu.yaml"}}, "from-values-repo-eu"},
	}
	files["chart/values-production.yaml"] = "greeting: from-package\n"
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if tc.opts.ValuesRoot == "values-repo" {
				tc.opts.ValuesRoot = writeTree(t, map[string]string{"apps/web/prod.yaml": "greeting: from-values-repo\n", "apps/web/eu.yaml": "greeting: from-values-repo-eu\n"})
			}
			ms, err := renderTestChart(t, files, tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			release := tc.opts.ReleaseName
			if release == "" {
				release = "demo"
			}
			if got := fieldOf(ms, "ConfigMap", release+"-web", "data", "greeting"); got != tc.want {
				t.Errorf("greeting = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestRenderChartOptions(t *testing.T) {
	t.Run("excludeCRDs", func(t *testing.T) {
		ms, err := renderTestChart(t, testChart(), HelmOptions{ExcludeCRDs: true})
		if err != nil {
			t.Fatal(err)
		}
		for _, m := range ms {
			if m.Object.GetKind() == "CustomResourceDefinition" {
				t.Errorf("CRD rendered with ExcludeCRDs: %s", m.Origin())
			}
		}
	})
	t.Run("capabilities", func(t *testing.T) {
		files := map[string]string{
			"chart/Chart.yaml": testChartYAML,
			"chart/templates/w.yaml": `{{- if .Capabilities.APIVersions.Has "example.com/v1/Widget" }}
apiVersion: example.com/v1
kind: Widget
metadata: {name: w}
{{- end }}
`,
		}
		for name, tc := range map[string]struct {
			caps *HelmCapabilities
			want int
		}{
			"defaults: no Widget":   {nil, 0},
			"cluster serves Widget": {&HelmCapabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1", "example.com/v1", "example.com/v1/Widget"}}, 1},
		} {
			t.Run(name, func(t *testing.T) {
				ms, err := renderTestChart(t, files, HelmOptions{Capabilities: tc.caps})
				if err != nil {
					t.Fatal(err)
				}
				if len(ms) != tc.want {
					t.Errorf("rendered %d objects, want %d: %v", len(ms), tc.want, summary(ms))
				}
			})
		}
	})
	t.Run("lookup returns nothing", func(t *testing.T) {
		files := map[string]string{
			"chart/Chart.yaml": testChartYAML,
			"chart/templates/c.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: c}
data:
  found: {{ len (lookup "v1" "Namespace" "" "kube-system") | quote }}
`,
		}
		ms, err := renderTestChart(t, files, HelmOptions{})
		if err != nil {
			t.Fatal(err)
		}
		if got := fieldOf(ms, "ConfigMap", "c", "data", "found"); got != "0" {
			t.Errorf("lookup found %q fields, want 0", got)
		}
	})
	t.Run("vendored dependency and .helmignore", func(t *testing.T) {
		files := map[string]string{
			"chart/Chart.yaml":             testChartYAML + "dependencies:\n- name: sub\n  version: 0.1.0\n  repository: https://charts.example.com\n",
			"chart/.helmignore":            "ignored/\n",
			"chart/ignored/x.yaml":         "not: a chart file",
			"chart/charts/sub/Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
			"chart/charts/sub/values.yaml": "who: sub\n",
			"chart/charts/sub/templates/c.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: {{ .Values.who }}}
`,
		}
		ms, err := renderTestChart(t, files, HelmOptions{})
		if err != nil {
			t.Fatal(err)
		}
		want := []string{"chart/charts/sub/templates/c.yaml ConfigMap sub"}
		if diff := cmp.Diff(want, summary(ms)); diff != "" {
			t.Errorf("rendered (-want +got):\n%s", diff)
		}
	})
}

// TestRenderChartRefused checks that bad charts and values fail with the
// file (and line where Helm gives one) named, and that no value of the
// values shows in the error.
func TestRenderChartRefused(t *testing.T) {
	const secret = "s3cr3t-qZ7wX"
	tests := map[string]struct {
		files   map[string]string
		opts    HelmOptions
		want    []string
		noValue bool
	}{
		"missing dependency": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML + "dependencies:\n- name: redis\n  version: 1.2.3\n  repository: https://charts.example.com\n"},
			want:  []string{"chart/Chart.yaml", `dependency "redis"`, "not vendored in charts/", "helm dependency build"},
		},
		"values file not YAML": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML, "values/bad.yaml": "a: 1\npassword: " + secret + "\n  - : [\n"},
			opts:  HelmOptions{ValuesFiles: []string{"values/bad.yaml"}},
			want:  []string{"values/bad.yaml", "helm.valuesFiles[0]", "not a YAML mapping", "line "},
		},
		"values file a plain string": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML, "values/str.yaml": secret + "\n"},
			opts:  HelmOptions{ValuesFiles: []string{"values/str.yaml"}},
			want:  []string{"values/str.yaml", "not a YAML mapping"},
		},
		"values file missing": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML},
			opts:  HelmOptions{ValuesFiles: []string{"values/none.yaml"}},
			want:  []string{"values/none.yaml", "helm.valuesFiles[0]"},
		},
		"values file not YAML, in another tree": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML, "vals/bad.yaml": "a: 1\n\npassword: " + secret + "\n  - : [\n"},
			opts:  HelmOptions{ValuesRoot: "vals", ValuesFrom: "source values", ValuesFiles: []string{"bad.yaml"}},
			want:  []string{"bad.yaml", "helm.valuesFiles[0] in source values", "not a YAML mapping", "line 4"},
		},
		"values file missing in the chart": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML},
			opts:  HelmOptions{ValuesRoot: "chart", ValuesFrom: "chart web", ValuesFiles: []string{"values-prod.yaml"}},
			want:  []string{"values-prod.yaml", "helm.valuesFiles[0] in chart web", "no such file"},
		},
		"values root missing": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML},
			opts:  HelmOptions{ValuesRoot: "gone", ValuesFrom: "source values", ValuesFiles: []string{"v.yaml"}},
			want:  []string{"v.yaml", "helm.valuesFiles in source values"},
		},
		"values file outside the repository": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML},
			opts:  HelmOptions{ValuesFiles: []string{"../etc/passwd"}},
			want:  []string{"outside the repository"},
		},
		"template error": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.x.y.z }}\n",
			},
			opts: HelmOptions{Values: map[string]any{"x": map[string]any{"y": secret}}},
			want: []string{"chart/Chart.yaml", "chart web: template", "chart/templates/a.yaml:4:"},
		},
		"fail with a value": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": `{{ fail (printf "bad password %q" .Values.pw) }}`,
			},
			opts: HelmOptions{Values: map[string]any{"pw": secret}},
			want: []string{"chart/templates/a.yaml:1:", "bad password"},
		},
		"required quoting an inline value unquoted": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": `{{ required (printf "token %s needs a user: set .Values.user" .Values.token) .Values.user }}`,
			},
			opts: HelmOptions{Values: map[string]any{"token": "tok-" + secret + "-x"}},
			want: []string{"chart/templates/a.yaml:1:", "token <redacted> needs a user: set .Values.user"},
		},
		"fail quoting a values file's value inside a longer word": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": `{{ fail (printf "cannot reach db-%s.internal" .Values.db.host) }}`,
				"values/prod.yaml":       "db:\n  host: " + secret + "\n",
			},
			opts: HelmOptions{ValuesFiles: []string{"values/prod.yaml"}},
			want: []string{"chart/templates/a.yaml:1:", "cannot reach db-<redacted>.internal"},
		},
		"template renders bad YAML": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: a\n data: x\n",
			},
			want: []string{"chart/templates/a.yaml", "document 1"},
		},
		// A value the chart writes unquoted that YAML reads as an alias or
		// a tag: the decoder's message quotes the value, or its start.
		"template renders a value YAML reads as an alias": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\nstringData:\n  password: {{ .Values.pw }}\n",
			},
			opts: HelmOptions{Values: map[string]any{"pw": "*" + secret}},
			want: []string{"chart/templates/a.yaml", "document 1", "unknown anchor <redacted> referenced", "withheld"},
		},
		"template renders a value YAML reads with a tag": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\nstringData:\n  password: {{ .Values.pw }}\n",
			},
			opts: HelmOptions{Values: map[string]any{"pw": "!!int " + secret}},
			want: []string{"chart/templates/a.yaml", "document 1", "cannot decode !!str <redacted> as a !!int"},
		},
		"template renders a values file's value YAML reads with a tag": {
			files: map[string]string{
				"chart/Chart.yaml":       testChartYAML,
				"chart/templates/a.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: a\nstringData:\n  password: {{ .Values.pw }}\n",
				"values/prod.yaml":       "pw: \"!!float " + secret + "\"\n",
			},
			opts: HelmOptions{ValuesFiles: []string{"values/prod.yaml"}},
			want: []string{"chart/templates/a.yaml", "document 1", "as a !!float"},
		},
		"chart and kustomization": {
			files: map[string]string{"chart/Chart.yaml": testChartYAML, "chart/kustomization.yaml": "resources: []\n"},
			want:  []string{"chart/kustomization.yaml", "both Chart.yaml and kustomization.yaml"},
		},
		"bad Chart.yaml": {
			files: map[string]string{"chart/Chart.yaml": "apiVersion: v2\nversion: 1.0.0\n"},
			want:  []string{"chart/Chart.yaml", "name is required"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ms, err := renderTestChart(t, tc.files, tc.opts)
			if err == nil {
				t.Fatalf("rendered %v, want an error", summary(ms))
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if frag, ok := fragmentOf(err.Error(), secret, 5); ok {
				t.Errorf("error shows %q of a value:\n%v", frag, err)
			}
		})
	}
}

// fragmentOf returns the first run of n bytes of secret that msg holds.
func fragmentOf(msg, secret string, n int) (string, bool) {
	for i := 0; i+n <= len(secret); i++ {
		if strings.Contains(msg, secret[i:i+n]) {
			return secret[i : i+n], true
		}
	}
	return "", false
}

func TestHookOf(t *testing.T) {
	tests := map[string]struct {
		annotation string
		hook       Hook
		keep       bool
	}{
		"none":                    {"", HookNone, true},
		"pre-install":             {"pre-install", HookBefore, true},
		"pre-upgrade":             {"pre-upgrade", HookBefore, true},
		"crd-install (Helm 2)":    {"crd-install", HookBefore, true},
		"post-install, spaced":    {"post-install, post-upgrade", HookAfter, true},
		"pre and post: before":    {"post-install,pre-install", HookBefore, true},
		"test":                    {"test", HookNone, false},
		"test-success":            {"test-success", HookNone, false},
		"pre-delete":              {"pre-delete", HookNone, false},
		"post-rollback":           {"post-rollback", HookNone, false},
		"delete and post-install": {"pre-delete,post-install", HookAfter, true},
		"unknown event":           {"on-tuesday", HookNone, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			obj := mustObject(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n")
			if tc.annotation != "" {
				obj.SetAnnotations(map[string]string{hookAnnotation: tc.annotation})
			}
			hook, keep := hookOf(obj)
			if hook != tc.hook || keep != tc.keep {
				t.Errorf("hookOf(%q) = %v, %v; want %v, %v", tc.annotation, hook, keep, tc.hook, tc.keep)
			}
		})
	}
}

func mustObject(t *testing.T, doc string) *unstructured.Unstructured {
	t.Helper()
	obj, err := decodeDocument([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	return obj
}
