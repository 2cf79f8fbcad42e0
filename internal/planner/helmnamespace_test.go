package planner

import (
	"context"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// nsChart renders a ConfigMap in .Release.Namespace, as most charts
// write it, and one that sets no namespace.
func nsChart() map[string]string {
	return map[string]string{
		"chart/Chart.yaml": testChartYAML,
		"chart/templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: in-release
  namespace: {{ .Release.Namespace }}
data:
  ns: {{ .Release.Namespace | quote }}
`,
		"chart/templates/bare.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bare}\n",
	}
}

// planChart renders files' chart with opts and plans it for an app whose
// namespace is appNS, telling the planner of the chart as syncd does
// (Tree.ChartRelease). It returns each planned object's namespace/name.
func planChart(t *testing.T, files map[string]string, opts HelmOptions, appNS string) ([]string, error) {
	t.Helper()
	root := writeTree(t, files)
	opts.ReleaseName = "demo"
	tree := Tree{Root: root, Dir: filepath.Join(root, "chart"), Helm: opts}
	ms, err := Render(context.Background(), tree)
	if err != nil {
		t.Fatal(err)
	}
	pl, err := New(App{Name: "web", Namespace: appNS, Manager: "syncd-web"}, Options{Chart: tree.ChartRelease()})
	if err != nil {
		t.Fatal(err)
	}
	plan, err := pl.Plan(context.Background(), ms)
	if err != nil {
		return nil, err
	}
	var got []string
	for _, o := range plan.Objects {
		got = append(got, o.Ref.Namespace+"/"+o.Ref.Name)
	}
	return got, nil
}

// TestPlanChartReleaseNamespace: .Release.Namespace is helm.namespace,
// else apps[].namespace (config.App.HelmNamespace, given here as
// HelmOptions.Namespace); only apps[].namespace places objects that set
// none. When neither is set, or only helm.namespace, an object left
// without a namespace is refused saying why and what to set, not
// blaming the template.
func TestPlanChartReleaseNamespace(t *testing.T) {
	tests := map[string]struct {
		releaseNS, appNS string
		files            map[string]string
		want             []string // planned objects
		err              []string // or the error's parts
	}{
		"apps[].namespace: .Release.Namespace and placement": {
			releaseNS: "shop", appNS: "shop",
			want: []string{"shop/bare", "shop/in-release"},
		},
		"neither set: .Release.Namespace is empty": {
			err: []string{
				"chart/templates/cm.yaml: document 1 (v1 ConfigMap in-release)", "empty .Release.Namespace",
				"neither apps[].namespace nor helm.namespace is set", "set apps[].namespace",
				"chart/templates/bare.yaml: document 1 (v1 ConfigMap bare)",
			},
		},
		"helm.namespace alone: .Release.Namespace only": {
			releaseNS: "team-a",
			err: []string{
				"chart/templates/bare.yaml: document 1 (v1 ConfigMap bare)",
				"helm.namespace (team-a) sets .Release.Namespace only and places no object",
				"set apps[].namespace: team-a",
			},
		},
		"helm.namespace alone, every template sets the namespace": {
			releaseNS: "team-a",
			files:     map[string]string{"chart/templates/bare.yaml": ""},
			want:      []string{"team-a/in-release"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files := nsChart()
			for k, v := range tc.files {
				files[k] = v
			}
			got, err := planChart(t, files, HelmOptions{Namespace: tc.releaseNS}, tc.appNS)
			if tc.err != nil {
				wantErrorParts(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("planned (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("not a chart: the app's namespace", func(t *testing.T) {
		pl, err := New(App{Name: "web", Manager: "syncd-web"}, Options{})
		if err != nil {
			t.Fatal(err)
		}
		_, err = pl.Plan(context.Background(), []Manifest{{File: "a.yaml", Index: 1, Object: mustObject(t, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")}})
		wantErrorParts(t, err, []string{"a.yaml: document 1", "ConfigMap is namespaced and has no metadata.namespace: set it, or set the app's namespace"})
	})
}
