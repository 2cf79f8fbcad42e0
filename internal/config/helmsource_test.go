package config

import (
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

const helmHeader = `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: charts
    helm:
      url: https://charts.example.com/stable
      interval: 10m
      auth: {username: bot, passwordFile: /run/secrets/pw, caFile: /run/secrets/ca.pem}
  - name: repo
    git: {url: https://example.com/org/repo.git, branch: main, interval: 1m}
`

func TestHelmSource(t *testing.T) {
	c, err := Parse([]byte(helmHeader+`apps:
  - name: web
    source: charts
    namespace: shop
    helm: {chart: podinfo, version: "~6.5", values: {replicas: 2}}
`), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	s, _ := c.Source("charts")
	got := []any{s.Kind(), s.URL(), s.Helm.Interval.Duration, *s.Helm.Auth, c.Apps[0].Helm.Chart, c.Apps[0].Helm.Version, c.Apps[0].HelmReleaseName()}
	want := []any{SourceHelm, "https://charts.example.com/stable", 10 * time.Minute, HelmAuth{Username: "bot", PasswordFile: "/run/secrets/pw", CAFile: "/run/secrets/ca.pem"}, "podinfo", "~6.5", "web"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("helm source (-want +got):\n%s", diff)
	}
}

func TestHelmValuesFiles(t *testing.T) {
	c, err := Parse([]byte(helmHeader+`apps:
  - name: packaged
    source: charts
    namespace: shop
    helm: {chart: podinfo, valuesFiles: [values-production.yaml, ci/extra.yaml]}
  - name: fromgit
    source: charts
    namespace: shop
    helm: {chart: podinfo, valuesSource: repo, valuesFiles: [apps/podinfo/values-prod.yaml]}
`), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	got := []any{c.Apps[0].Helm.ValuesFiles, c.Apps[0].Helm.ValuesSource, c.Apps[1].Helm.ValuesFiles, c.Apps[1].Helm.ValuesSource}
	want := []any{[]string{"values-production.yaml", "ci/extra.yaml"}, "", []string{"apps/podinfo/values-prod.yaml"}, "repo"}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("values files (-want +got):\n%s", diff)
	}
}

func TestHelmSourceRejects(t *testing.T) {
	tests := map[string]struct {
		sources, app string
		want         []string
	}{
		"no chart":                           {"", `{version: 1.0.0}`, []string{"apps[0].helm.chart", `chart is required: source "charts" is a Helm repository`}},
		"bad range":                          {"", `{chart: web, version: "1.2.x.y"}`, []string{"apps[0].helm.version", "chart web", "not a version or semver range"}},
		"both kinds":                         {"git: {url: https://x.example/r.git, branch: main, interval: 1m}\n    helm: {url: https://c.example, interval: 1m}", `{chart: web}`, []string{"sources[0].helm", "git and helm are both set"}},
		"neither":                            {"helm: null", `{chart: web}`, []string{"sources[0].git.url", "url is required"}},
		"no interval":                        {"helm: {url: https://c.example}", `{chart: web}`, []string{"sources[0].helm.interval", "required"}},
		"oci url, query":                     {"helm: {url: \"oci://ghcr.io/org/charts?x=1\", interval: 1m}", `{chart: web}`, []string{"sources[0].helm.url", "query"}},
		"bad scheme":                         {"helm: {url: ftp://c.example, interval: 1m}", `{chart: web}`, []string{"sources[0].helm.url", `"ftp"`}},
		"password in url":                    {"helm: {url: \"https://bot:hunter2@c.example\", interval: 1m}", `{chart: web}`, []string{"sources[0].helm.url", "embeds credentials"}},
		"token over http":                    {"helm: {url: http://c.example, interval: 1m, auth: {bearerTokenFile: /t}}", `{chart: web}`, []string{"sources[0].helm.auth", "unencrypted"}},
		"both creds":                         {"helm: {url: https://c.example, interval: 1m, auth: {username: u, passwordFile: /p, bearerTokenFile: /t}}", `{chart: web}`, []string{"sources[0].helm.auth", "both set"}},
		"no username":                        {"helm: {url: https://c.example, interval: 1m, auth: {passwordFile: /p}}", `{chart: web}`, []string{"sources[0].helm.auth.username", "required"}},
		"docker config on https":             {"helm: {url: https://c.example, interval: 1m, auth: {dockerConfigFile: /d.json}}", `{chart: web}`, []string{"sources[0].helm.auth.dockerConfigFile", "only for a Helm repository at an oci:// URL", "for an https:// repository set username and passwordFile, or bearerTokenFile"}},
		"docker config and password":         {"helm: {url: oci://ghcr.io/org/charts, interval: 1m, auth: {dockerConfigFile: /d.json, username: u, passwordFile: /p}}", `{chart: web}`, []string{"sources[0].helm.auth", "dockerConfigFile and passwordFile are both set"}},
		"values file leaves the chart":       {"", `{chart: web, valuesFiles: [../v.yaml]}`, []string{"apps[0].helm.valuesFiles[0]", "leaves the repository"}},
		"values source not declared":         {"", `{chart: web, valuesFiles: [v.yaml], valuesSource: nope}`, []string{"apps[0].helm.valuesSource", `source "nope" is not declared`}},
		"values source not Git":              {"helm: {url: https://charts.example.com, interval: 1m}\n  - name: other\n    helm: {url: https://o.example.com, interval: 1m}", `{chart: web, valuesFiles: [v.yaml], valuesSource: other}`, []string{"apps[0].helm.valuesSource", `source "other" is not a Git source (it is helm)`}},
		"values source an OCI artifact":      {"helm: {url: https://charts.example.com, interval: 1m}\n  - name: other\n    oci: {url: oci://r.example.com/m, tag: v1, interval: 1m}", `{chart: web, valuesFiles: [v.yaml], valuesSource: other}`, []string{"apps[0].helm.valuesSource", `source "other" is not a Git source (it is oci)`}},
		"values source without files":        {"helm: {url: https://charts.example.com, interval: 1m}\n  - name: vals\n    git: {url: https://example.com/v.git, branch: main, interval: 1m}", `{chart: web, valuesSource: vals}`, []string{"apps[0].helm.valuesSource", "helm.valuesFiles is empty"}},
		"values source path leaves the tree": {"helm: {url: https://charts.example.com, interval: 1m}\n  - name: vals\n    git: {url: https://example.com/v.git, branch: main, interval: 1m}", `{chart: web, valuesFiles: [a/../../v.yaml], valuesSource: vals}`, []string{"apps[0].helm.valuesFiles[0]", "leaves the repository"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := "sources:\n  - name: charts\n    helm: {url: https://charts.example.com, interval: 1m}\n"
			if tc.sources != "" {
				src = "sources:\n  - name: charts\n    " + tc.sources + "\n"
			}
			doc := "apiVersion: syncd/v1alpha1\nkind: Config\n" + src + "apps:\n  - name: web\n    source: charts\n    namespace: shop\n    helm: " + tc.app + "\n"
			_, err := Parse([]byte(doc), "syncd.yaml")
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Errorf("error shows the password:\n%v", err)
			}
		})
	}
}

// TestHelmSourceDockerConfig: a Helm repository at an oci:// URL takes a
// Docker config file (and a CA beside it), made absolute against the
// config's directory like every other file.
func TestHelmSourceDockerConfig(t *testing.T) {
	c, err := Parse([]byte(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: charts
    helm:
      url: oci://ghcr.io/org/charts
      interval: 10m
      auth: {dockerConfigFile: secrets/docker.json, caFile: /run/secrets/ca.pem}
apps:
  - name: web
    source: charts
    namespace: shop
    helm: {chart: podinfo}
`), "syncd.yaml")
	if err != nil {
		t.Fatal(err)
	}
	c.resolveFiles("/cfg")
	s, _ := c.Source("charts")
	if diff := cmp.Diff(HelmAuth{DockerConfigFile: "/cfg/secrets/docker.json", CAFile: "/run/secrets/ca.pem"}, *s.Helm.Auth); diff != "" {
		t.Errorf("helm.auth (-want +got):\n%s", diff)
	}
}
