package config

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestHelmSection(t *testing.T) {
	c, err := Parse([]byte(header+`apps:
  - name: web
    source: repo
    path: charts/web
    namespace: shop
    helm:
      releaseName: storefront
      valuesFiles: [charts/web/values-prod.yaml]
      values: {replicas: 3, image: {tag: "1.2"}}
      includeCRDs: false
  - name: plain
    source: repo
    namespace: shop
`), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	web, plain := c.Apps[0], c.Apps[1]
	got := []any{web.HelmReleaseName(), web.HelmNamespace(), web.HelmIncludesCRDs(), web.Helm.ValuesFiles, web.Helm.Values["replicas"],
		plain.HelmReleaseName(), plain.HelmNamespace(), plain.HelmIncludesCRDs()}
	want := []any{"storefront", "shop", false, []string{"charts/web/values-prod.yaml"}, int64(3),
		"plain", "shop", true}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("helm settings (-want +got):\n%s", diff)
	}
}

func TestHelmSectionRejects(t *testing.T) {
	tests := map[string]struct {
		helm string
		want []string
	}{
		"namespace differs":             {`{namespace: other}`, []string{"apps[0].helm.namespace", `"other" differs from the app's namespace "shop"`}},
		"values file leaves":            {`{valuesFiles: [../x.yaml]}`, []string{"apps[0].helm.valuesFiles[0]", "leaves the repository"}},
		"values file absolute":          {`{valuesFiles: [/etc/x.yaml]}`, []string{"apps[0].helm.valuesFiles[0]", "is absolute"}},
		"bad release name":              {`{releaseName: Web_1}`, []string{"apps[0].helm.releaseName", "not a valid release name"}},
		"unknown field":                 {`{charts: web}`, []string{"apps[0].helm", "charts"}},
		"chart on a Git source":         {`{chart: web}`, []string{"apps[0].helm.chart", `source "repo" is not a Helm repository`}},
		"values source on a Git source": {`{valuesSource: repo, valuesFiles: [v.yaml]}`, []string{"apps[0].helm.valuesSource", `source "repo" is a git source`}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(header+"apps:\n  - name: web\n    source: repo\n    namespace: shop\n    helm: "+tc.helm+"\n"), "syncd.yaml")
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
}
