package planner

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// crdChartCRD is a CustomResourceDefinition of kind in group with one
// served version v1 and, when unserved is set, a version v2 that is not
// served.
func crdChartCRD(group, plural, kind string, unserved bool) string {
	v2 := ""
	if unserved {
		v2 = "\n  - {name: v2, served: false, storage: false, schema: {openAPIV3Schema: {type: object}}}"
	}
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[1]s}
spec:
  group: %[1]s
  names: {kind: %[3]s, plural: %[2]s}
  scope: Namespaced
  versions:
  - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}%[4]s
`, group, plural, kind, v2)
}

// crdCapsChart has a CRD in its own crds/ (served v1, unserved v2), a
// subchart behind a condition with a CRD in its crds/, and a ConfigMap
// telling what .Capabilities.APIVersions.Has answered for their APIs.
func crdCapsChart() map[string]string {
	return map[string]string{
		"chart/Chart.yaml":             testChartYAML + "dependencies:\n- name: sub\n  version: 0.1.0\n  condition: sub.enabled\n",
		"chart/values.yaml":            "sub: {enabled: true}\n",
		"chart/crds/gizmos.yaml":       crdChartCRD("gizmo.example.com", "gizmos", "Gizmo", true),
		"chart/charts/sub/Chart.yaml":  "apiVersion: v2\nname: sub\nversion: 0.1.0\n",
		"chart/charts/sub/crds/g.yaml": crdChartCRD("gadget.example.com", "gadgets", "Gadget", false),
		"chart/charts/sub/values.yaml": "{}\n",
		"chart/templates/has.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: has}
data:
  gizmo-gv: {{ .Capabilities.APIVersions.Has "gizmo.example.com/v1" | quote }}
  gizmo: {{ .Capabilities.APIVersions.Has "gizmo.example.com/v1/Gizmo" | quote }}
  gizmo-v2: {{ .Capabilities.APIVersions.Has "gizmo.example.com/v2/Gizmo" | quote }}
  gadget: {{ .Capabilities.APIVersions.Has "gadget.example.com/v1/Gadget" | quote }}
  deployments: {{ .Capabilities.APIVersions.Has "apps/v1/Deployment" | quote }}
`,
	}
}

// TestRenderChartCapabilitiesCRDs: the templates see the APIs of the
// chart's crds/ (and its enabled subcharts') as helm install does, which
// creates them before it reads the capabilities: with a cluster's
// capabilities and with Helm's defaults alike, so that render, plan and
// the first apply render the same objects. A version that is not served,
// a disabled subchart's crds/ and crds/ left out add nothing.
func TestRenderChartCapabilitiesCRDs(t *testing.T) {
	cluster := &HelmCapabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1", "apps/v1", "apps/v1/Deployment"}}
	has := func(gizmo, gadget, deployments bool) map[string]any {
		return map[string]any{
			"gizmo-gv": fmt.Sprint(gizmo), "gizmo": fmt.Sprint(gizmo), "gizmo-v2": "false",
			"gadget": fmt.Sprint(gadget), "deployments": fmt.Sprint(deployments),
		}
	}
	tests := map[string]struct {
		opts HelmOptions
		want map[string]any
	}{
		"Helm's defaults": {
			opts: HelmOptions{},
			want: has(true, true, false),
		},
		"a cluster's capabilities": {
			opts: HelmOptions{Capabilities: cluster},
			want: has(true, true, true),
		},
		"subchart disabled": {
			opts: HelmOptions{Capabilities: cluster, Values: map[string]any{"sub": map[string]any{"enabled": false}}},
			want: has(true, false, true),
		},
		"crds/ left out": {
			opts: HelmOptions{Capabilities: cluster, ExcludeCRDs: true},
			want: has(false, false, true),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ms, err := renderTestChart(t, crdCapsChart(), tc.opts)
			if err != nil {
				t.Fatal(err)
			}
			var got map[string]any
			for _, m := range ms {
				if m.Object.GetKind() == "ConfigMap" && m.Object.GetName() == "has" {
					got, _ = m.Object.Object["data"].(map[string]any)
				}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf(".Capabilities.APIVersions.Has (-want +got):\n%s", diff)
			}
		})
	}
	t.Run("the cluster's list is not changed", func(t *testing.T) {
		caps := &HelmCapabilities{KubeVersion: "v1.37.2", APIVersions: []string{"v1"}}
		if _, err := renderTestChart(t, crdCapsChart(), HelmOptions{Capabilities: caps}); err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"v1"}, caps.APIVersions); diff != "" {
			t.Errorf("APIVersions after a render (-want +got):\n%s", diff)
		}
	})
}
