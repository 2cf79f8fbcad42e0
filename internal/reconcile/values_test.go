package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/source"
)

func TestJoinValues(t *testing.T) {
	chart := source.Revision{Source: "charts", SHA: "aaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaaa", Helm: &source.HelmRevision{}}
	values := source.Revision{Source: "values", SHA: "bbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbbb", Dir: "/cache/values/tree"}
	joined := joinValues(chart, values)
	got := []string{joined.SHA, ShortSHA(joined.SHA), ShortSHA(chart.SHA), valuesLabel(joined), valuesLabel(chart), joined.Values.Dir}
	want := []string{chart.SHA + "+values@" + values.SHA, "aaaaaaaaaaaa+values@bbbbbbbbbbbb", "aaaaaaaaaaaa", "+values@bbbbbbbbbbbb", "", "/cache/values/tree"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("joined revision (-want +got):\n%s", diff)
	}
}

func TestWithValuesRoot(t *testing.T) {
	repoChart := config.App{Name: "web", Source: "charts", AppSpec: config.AppSpec{Helm: &config.HelmSpec{Chart: "podinfo", ValuesFiles: []string{"values-prod.yaml"}}}}
	gitChart := config.App{Name: "web", Source: "repo", AppSpec: config.AppSpec{Helm: &config.HelmSpec{ValuesFiles: []string{"deploy/values.yaml"}}}}
	chartRev := source.Revision{Source: "charts", SHA: "c", Helm: &source.HelmRevision{}}
	tests := map[string]struct {
		app        config.App
		rev        source.Revision
		root, from string
	}{
		"repository chart: its package": {repoChart, chartRev, "/trees/0/podinfo", "chart podinfo"},
		"values source: its tree":       {repoChart, joinValues(chartRev, source.Revision{Source: "values", SHA: "v", Dir: "/values"}), "/values", "source values"},
		"Git chart: the tree's root":    {gitChart, source.Revision{Source: "repo", SHA: "g", Dir: "/repo"}, "", ""},
		"repository chart from --path":  {repoChart, source.Revision{}, "/trees/0/podinfo", "chart podinfo"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := withValuesRoot(planner.HelmOptions{}, tc.app, tc.rev, "/trees/0/podinfo")
			if diff := cmp.Diff([]string{tc.root, tc.from}, []string{got.ValuesRoot, got.ValuesFrom}); diff != "" {
				t.Errorf("values root (-want +got):\n%s", diff)
			}
		})
	}
}
