package planner

import (
	"context"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// The charts in these tests are ours, written in the shapes found when
// public charts were rendered by hand (docs/helm.md, "Tried on").

// depChartYAML lists two remote dependencies the way argo-cd (redis-ha),
// external-secrets (an oci:// dependency) and kube-prometheus-stack
// (windows exporter) do: each behind a condition, off by default.
const depChartYAML = `apiVersion: v2
name: web
version: 1.0.0
dependencies:
- name: cache
  version: 4.38.0
  repository: https://charts.example.com/
  condition: cache.enabled
- name: sdk-server
  version: v0.6.0
  repository: oci://registry.example.com/charts
  condition: sdk-server.enabled
- name: common
  version: 2.x.x
  repository: oci://registry.example.com/library
  tags: [web-common]
`

func depChart() map[string]string {
	return map[string]string{
		"chart/Chart.yaml":  depChartYAML,
		"chart/values.yaml": "cache: {enabled: false}\nsdk-server: {enabled: false}\ntags: {web-common: false}\n",
		"chart/templates/c.yaml": `apiVersion: v1
kind: ConfigMap
metadata: {name: web}
`,
	}
}

// TestRenderChartDisabledDependency: a dependency its condition or tags
// turn off renders nothing, so it need not be vendored; one that is on
// must be, and the error names it, its condition and both ways out.
func TestRenderChartDisabledDependency(t *testing.T) {
	tests := map[string]struct {
		values map[string]any
		extra  map[string]string
		want   []string // rendered objects
		err    []string // or the error's parts
	}{
		"all off, none vendored": {
			want: []string{"chart/templates/c.yaml ConfigMap web"},
		},
		"on by its condition, not vendored": {
			values: map[string]any{"cache": map[string]any{"enabled": true}},
			err:    []string{"chart/Chart.yaml", `dependency "cache"`, "https://charts.example.com/", "enabled (condition cache.enabled)", "helm dependency build", "set cache.enabled to false"},
		},
		"on by its tag, not vendored": {
			values: map[string]any{"tags": map[string]any{"web-common": true}},
			err:    []string{`dependency "common"`, "enabled (tags web-common)", "helm dependency build"},
		},
		"every one on, none vendored: all named at once": {
			values: map[string]any{"cache": map[string]any{"enabled": true}, "sdk-server": map[string]any{"enabled": true}, "tags": map[string]any{"web-common": true}},
			err: []string{
				`chart/Chart.yaml: dependency "cache"`, "set cache.enabled to false",
				`chart/Chart.yaml: dependency "sdk-server"`, "oci://registry.example.com/charts", "set sdk-server.enabled to false",
				`chart/Chart.yaml: dependency "common"`, "enabled (tags web-common)",
			},
		},
		"one of the chart's and one of a vendored subchart's, not vendored: both named": {
			values: map[string]any{"cache": map[string]any{"enabled": true, "sentinel": map[string]any{"enabled": true}}, "sdk-server": map[string]any{"enabled": true}},
			extra: map[string]string{
				"chart/charts/cache/Chart.yaml": "apiVersion: v2\nname: cache\nversion: 4.38.0\ndependencies:\n- name: sentinel\n  version: 1.0.0\n  repository: https://charts.example.com/\n  condition: sentinel.enabled\n",
			},
			err: []string{`chart/Chart.yaml: dependency "sdk-server"`, `chart/charts/cache/Chart.yaml: dependency "sentinel"`},
		},
		"on and vendored": {
			values: map[string]any{"cache": map[string]any{"enabled": true}},
			extra: map[string]string{
				"chart/charts/cache/Chart.yaml":       "apiVersion: v2\nname: cache\nversion: 4.38.0\n",
				"chart/charts/cache/templates/s.yaml": "apiVersion: v1\nkind: Service\nmetadata: {name: cache}\nspec: {ports: [{port: 6379}]}\n",
			},
			want: []string{"chart/charts/cache/templates/s.yaml Service cache", "chart/templates/c.yaml ConfigMap web"},
		},
		"a vendored subchart's own dependency on, not vendored": {
			values: map[string]any{"cache": map[string]any{"enabled": true, "sentinel": map[string]any{"enabled": true}}},
			extra: map[string]string{
				"chart/charts/cache/Chart.yaml": "apiVersion: v2\nname: cache\nversion: 4.38.0\ndependencies:\n- name: sentinel\n  version: 1.0.0\n  repository: https://charts.example.com/\n  condition: sentinel.enabled\n",
			},
			err: []string{"chart/charts/cache/Chart.yaml", `dependency "sentinel"`, "condition sentinel.enabled"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files := depChart()
			for k, v := range tc.extra {
				files[k] = v
			}
			ms, err := renderTestChart(t, files, HelmOptions{Values: tc.values})
			if tc.err != nil {
				wantErrorParts(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, summary(ms)); diff != "" {
				t.Errorf("rendered (-want +got):\n%s", diff)
			}
		})
	}
}

// schemaChart has a values schema in the shape of cert-manager's (typed
// fields, additionalProperties: false) and a vendored subchart with its
// own schema (bitnami's, a password with a pattern).
func schemaChart(schema string) map[string]string {
	return map[string]string{
		"chart/Chart.yaml":            testChartYAML,
		"chart/values.yaml":           "replicaCount: 1\npdb: {enabled: false}\n",
		"chart/values.schema.json":    schema,
		"chart/templates/c.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
		"chart/charts/db/Chart.yaml":  "apiVersion: v2\nname: db\nversion: 1.0.0\n",
		"chart/charts/db/values.yaml": "auth: {password: \"\"}\n",
		"chart/charts/db/values.schema.json": `{"type": "object", "properties": {"auth": {"type": "object",
  "properties": {"password": {"type": "string", "pattern": "^[a-z0-9]{0,8}$"}}}}}`,
	}
}

const certManagerShapedSchema = `{
  "$schema": "http://json-schema.org/draft-07/schema#",
  "type": "object",
  "properties": {
    "replicaCount": {"$ref": "#/$defs/count"},
    "mode": {"enum": ["a", "b"]},
    "pdb": {"type": "object", "additionalProperties": false,
      "properties": {"enabled": {"type": "boolean"}, "minAvailable": {"type": "integer", "minimum": 1}}}
  },
  "$defs": {"count": {"type": "number"}}
}`

// TestRenderChartSchema: values that fail a chart's values.schema.json
// are named by their path in the values (a subchart's under its name),
// the schema file by its repository path, and no value shows.
func TestRenderChartSchema(t *testing.T) {
	const secret = "S3CRET-Value"
	tests := map[string]struct {
		values map[string]any
		want   []string
	}{
		"a wrong type, through an internal $ref": {
			values: map[string]any{"replicaCount": "two"},
			want:   []string{"chart/values.schema.json: at /replicaCount: got string, want number"},
		},
		"a property the schema does not allow": {
			values: map[string]any{"pdb": map[string]any{"bogus": true}},
			want:   []string{"chart/values.schema.json: at /pdb: additional properties 'bogus' not allowed"},
		},
		"below a minimum": {
			values: map[string]any{"pdb": map[string]any{"minAvailable": 0}},
			want:   []string{"at /pdb/minAvailable: below the minimum 1"},
		},
		"not in an enum": {
			values: map[string]any{"mode": secret},
			want:   []string{"at /mode: value must be one of 'a', 'b'"},
		},
		"a subchart's value failing its pattern": {
			values: map[string]any{"db": map[string]any{"auth": map[string]any{"password": secret}}},
			want:   []string{"chart/charts/db/values.schema.json: at /db/auth/password: does not match the pattern ^[a-z0-9]{0,8}$"},
		},
		"a subchart's values not a mapping": {
			values: map[string]any{"db": secret},
			want:   []string{"chart/Chart.yaml: chart web: ", "type mismatch on db: <redacted>"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ms, err := renderTestChart(t, schemaChart(certManagerShapedSchema), HelmOptions{Values: tc.values})
			wantErrorParts(t, err, tc.want)
			if err != nil && strings.Contains(err.Error(), secret) {
				t.Errorf("error shows a value:\n%v", err)
			}
			_ = ms
		})
	}
	t.Run("valid values render", func(t *testing.T) {
		ms, err := renderTestChart(t, schemaChart(certManagerShapedSchema), HelmOptions{Values: map[string]any{"replicaCount": 2, "db": map[string]any{"auth": map[string]any{"password": "abc"}}}})
		if err != nil {
			t.Fatal(err)
		}
		if diff := cmp.Diff([]string{"chart/templates/c.yaml ConfigMap web"}, summary(ms)); diff != "" {
			t.Errorf("rendered (-want +got):\n%s", diff)
		}
	})
}

// TestRenderChartSchemaExternalRef: a schema's $ref to a URL or a local
// file is refused, naming the reference, and nothing is requested (helm's
// own check would fetch it); an urn: is read as permissive, as helm does.
func TestRenderChartSchemaExternalRef(t *testing.T) {
	var requests atomic.Int32
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		requests.Add(1)
		w.Write([]byte(`{"type": "integer"}`))
	}))
	defer srv.Close()
	schema := func(ref string) string {
		return `{"type": "object", "properties": {"port": {"$ref": "` + ref + `"}}}`
	}
	for name, ref := range map[string]string{
		"http":          srv.URL + "/port.json",
		"relative file": "port.json",
		"absolute file": "file:///etc/hostname",
	} {
		t.Run(name, func(t *testing.T) {
			files := schemaChart(schema(ref))
			_, err := renderTestChart(t, files, HelmOptions{})
			wantErrorParts(t, err, []string{"chart/values.schema.json: $ref ", "syncd loads no schema from outside values.schema.json"})
		})
	}
	if n := requests.Load(); n != 0 {
		t.Errorf("the schema server got %d requests, want none", n)
	}
	t.Run("urn", func(t *testing.T) {
		if _, err := renderTestChart(t, schemaChart(schema("urn:example:port")), HelmOptions{Values: map[string]any{"port": "any"}}); err != nil {
			t.Fatal(err)
		}
	})
}

// TestRenderChartKubeVersion: Chart.yaml's kubeVersion is checked against
// the Kubernetes version the chart is rendered for, as helm install does;
// a provider's version suffix (v1.30.1-eks-…) matches a "-0" range.
func TestRenderChartKubeVersion(t *testing.T) {
	tests := map[string]struct {
		kubeVersion string
		caps        *HelmCapabilities
		err         []string
	}{
		"defaults in range":            {kubeVersion: ">=1.20.0-0"},
		"a provider's version":         {kubeVersion: ">=1.25.0-0", caps: &HelmCapabilities{KubeVersion: "v1.30.1-eks-2f008fe", APIVersions: []string{"v1"}}},
		"cluster too old for a chart":  {kubeVersion: ">=1.31.0-0", caps: &HelmCapabilities{KubeVersion: "v1.30.1", APIVersions: []string{"v1"}}, err: []string{"chart/Chart.yaml", `kubeVersion ">=1.31.0-0" leaves out Kubernetes v1.30.1`}},
		"defaults too new for a chart": {kubeVersion: "<1.20.0", err: []string{`kubeVersion "<1.20.0" leaves out Kubernetes ` + DefaultHelmCapabilities().KubeVersion}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			files := map[string]string{
				"chart/Chart.yaml":       testChartYAML + "kubeVersion: \"" + tc.kubeVersion + "\"\n",
				"chart/templates/c.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
			}
			ms, err := renderTestChart(t, files, HelmOptions{Capabilities: tc.caps})
			if tc.err != nil {
				wantErrorParts(t, err, tc.err)
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if len(ms) != 1 {
				t.Errorf("rendered %v, want the ConfigMap", summary(ms))
			}
		})
	}
}

// wantErrorParts fails unless err mentions every part.
func wantErrorParts(t *testing.T, err error, parts []string) {
	t.Helper()
	if err == nil {
		t.Fatalf("no error, want one mentioning %q", parts)
	}
	for _, p := range parts {
		if !strings.Contains(err.Error(), p) {
			t.Errorf("error does not mention %q:\n%v", p, err)
		}
	}
}

// TestRenderChartSchemaPathOnce: the schema file of a subchart named like
// its parent (a wrapper chart around the upstream chart, as
// charts/external-dns is in chart collections) is named by its path in
// the repository once: Helm's template-name rewriting must not run over a
// path that is already the repository's.
func TestRenderChartSchemaPathOnce(t *testing.T) {
	root := writeTree(t, map[string]string{
		"charts/external-dns/Chart.yaml":                             "apiVersion: v2\nname: external-dns\nversion: 1.0.0\ndependencies:\n- name: external-dns\n  version: 1.0.0\n",
		"charts/external-dns/values.yaml":                            "external-dns: {}\n",
		"charts/external-dns/templates/c.yaml":                       "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n",
		"charts/external-dns/charts/external-dns/Chart.yaml":         "apiVersion: v2\nname: external-dns\nversion: 1.0.0\n",
		"charts/external-dns/charts/external-dns/values.schema.json": `{"type": "object", "required": ["policy"]}`,
	})
	_, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, "charts", "external-dns"), Helm: HelmOptions{ReleaseName: "dns"}})
	want := "\ncharts/external-dns/charts/external-dns/values.schema.json: at /external-dns: missing property 'policy'"
	if err == nil || !strings.Contains(err.Error(), want) {
		t.Fatalf("error = %v\nwant it to contain %q", err, want)
	}
}
