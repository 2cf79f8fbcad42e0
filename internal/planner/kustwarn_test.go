package planner

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestKustomizeWarnings: each deprecated field of each kustomization a
// build reaches is one warning naming its file, the way flagger's and
// argo-rollouts' installs use bases, commonLabels and patchesJson6902;
// a kustomization using none, a chart and a plain directory have none.
func TestKustomizeWarnings(t *testing.T) {
	root := writeTree(t, map[string]string{
		"base/kustomization.yaml":    "commonLabels: {app: web}\nresources: [cm.yaml]\n",
		"base/cm.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
		"overlay/kustomization.yaml": "bases: [../base]\npatchesJson6902:\n- target: {version: v1, kind: ConfigMap, name: web}\n  path: p.yaml\n",
		"overlay/p.yaml":             "- {op: add, path: /data, value: {a: b}}\n",
		"modern/kustomization.yaml":  "resources: [../base]\nlabels: [{pairs: {tier: web}}]\n",
		"plain/cm.yaml":              "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: plain}\n",
		"chart/Chart.yaml":           testChartYAML,
		"chart/templates/c.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c}\n",
	})
	tests := map[string][]Warning{
		"overlay": {
			{Object: "overlay/kustomization.yaml", Message: "'bases' is deprecated. Please use 'resources' instead. Run 'kustomize edit fix' to update your Kustomization automatically."},
			{Object: "overlay/kustomization.yaml", Message: "'patchesJson6902' is deprecated. Please use 'patches' instead. Run 'kustomize edit fix' to update your Kustomization automatically."},
			{Object: "base/kustomization.yaml", Message: "'commonLabels' is deprecated. Please use 'labels' instead. Run 'kustomize edit fix' to update your Kustomization automatically."},
		},
		"modern": {
			{Object: "base/kustomization.yaml", Message: "'commonLabels' is deprecated. Please use 'labels' instead. Run 'kustomize edit fix' to update your Kustomization automatically."},
		},
		"plain": nil,
		"chart": nil,
	}
	for dir, want := range tests {
		t.Run(dir, func(t *testing.T) {
			got := KustomizeWarnings(Tree{Root: root, Dir: filepath.Join(root, dir)})
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("warnings (-want +got):\n%s", diff)
			}
		})
	}
}
