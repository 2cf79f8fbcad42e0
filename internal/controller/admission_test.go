package controller

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestAdmissionRejectsInvalidObjects checks the CRDs' CEL rules at
// admission: each invalid object is refused with the file validation's
// message, and a valid one is accepted with prune defaulted to true.
func TestAdmissionRejectsInvalidObjects(t *testing.T) {
	dyn := installCRDs(t)
	ns := env.Namespace(t)
	tests := map[string]struct {
		resource string
		manifest string
		want     string // "" accepts
	}{
		"valid app": {resource: "apps", manifest: `
kind: App
metadata: {name: web}
spec: {sourceRef: {kind: GitSource, name: repo}, path: deploy/prod}`},
		"path leaves the repository": {resource: "apps", manifest: `
kind: App
metadata: {name: up}
spec: {sourceRef: {kind: GitSource, name: repo}, path: ../other}`,
			want: `"../other" leaves the repository (..); write a directory inside it, relative to the root`},
		"absolute path": {resource: "apps", manifest: `
kind: App
metadata: {name: abs}
spec: {sourceRef: {kind: GitSource, name: repo}, path: /etc}`,
			want: `"/etc" is absolute; write the directory relative to the repository root, e.g. deploy/prod`},
		"prune budget": {resource: "apps", manifest: `
kind: App
metadata: {name: budget}
spec: {sourceRef: {kind: GitSource, name: repo}, pruneBudget: 120}`,
			want: `pruneBudget is not a percentage; use 0 to 100`},
		"handoff": {resource: "apps", manifest: `
kind: App
metadata: {name: handoff}
spec: {sourceRef: {kind: GitSource, name: repo}, handoff: keep}`,
			want: `"keep" is not a handoff mode; use hold (default) or release`},
		"timeout without wait": {resource: "apps", manifest: `
kind: App
metadata: {name: timeout}
spec: {sourceRef: {kind: GitSource, name: repo}, timeout: 5m}`,
			want: `timeout only applies with wait: true; set wait: true or drop timeout`},
		"dryRunAll without validation": {resource: "apps", manifest: `
kind: App
metadata: {name: dryrunall}
spec: {sourceRef: {kind: GitSource, name: repo}, validate: false, dryRunAll: true}`,
			want: `dryRunAll only applies with validation on; remove validate: false or drop dryRunAll`},
		"source kind": {resource: "apps", manifest: `
kind: App
metadata: {name: kind}
spec: {sourceRef: {kind: OCIRepository, name: repo}}`,
			want: `"OCIRepository" is not a source kind; use GitSource, HelmSource or OCISource`},
		"app name not a label": {resource: "apps", manifest: `
kind: App
metadata: {name: web.prod}
spec: {sourceRef: {kind: GitSource, name: repo}}`,
			want: `not a valid app name (lowercase letters, digits and -, at most 63)`},
		"valid app with every #18 field": {resource: "apps", manifest: `
kind: App
metadata: {name: full}
spec:
  sourceRef: {kind: GitSource, name: repo}
  substitute: {CLUSTER: prod}
  substituteFrom: [{kind: ConfigMap, name: vars, optional: true}, {kind: Secret, name: tokens}]
  substituteStrict: false
  dependsOn: [db, queue]
  ignore: [{kinds: [apps/Deployment], paths: [.spec.replicas]}]
  decryption: {provider: sops, secretRef: {name: sops-keys}}
  helm: {releaseName: web, values: {replicas: 2, image: {tag: "1.2"}}, valuesFiles: [values/prod.yaml]}`},
		"valid app on another cluster": {resource: "apps", manifest: `
kind: App
metadata: {name: remote}
spec:
  sourceRef: {kind: GitSource, name: repo}
  cluster: {name: prod, kubeConfig: {secretRef: {name: prod-kubeconfig}}, context: admin, inventoryNamespace: syncd-inv}`},
		"cluster named local": {resource: "apps", manifest: `
kind: App
metadata: {name: local}
spec: {sourceRef: {kind: GitSource, name: repo}, cluster: {name: local, kubeConfig: {secretRef: {name: k}}}}`,
			want: `the cluster name "local" stands for syncd's own cluster; set cluster.name to another name`},
		"cluster name not a label value": {resource: "apps", manifest: `
kind: App
metadata: {name: label}
spec: {sourceRef: {kind: GitSource, name: repo}, cluster: {name: "prod/eu", kubeConfig: {secretRef: {name: k}}}}`,
			want: `cluster name "prod/eu" cannot be a metrics label value (at most 63 letters, digits, '-', '_' and '.'): set cluster.name`},
		"cluster without kubeConfig": {resource: "apps", manifest: `
kind: App
metadata: {name: nokc}
spec: {sourceRef: {kind: GitSource, name: repo}, cluster: {name: prod}}`,
			want: `spec.cluster.kubeConfig: Required value`},
		"variable name": {resource: "apps", manifest: `
kind: App
metadata: {name: varname}
spec: {sourceRef: {kind: GitSource, name: repo}, substitute: {1ST: x}}`,
			want: `a key of substitute is not a variable name: use letters, digits and underscores, not starting with a digit`},
		"substituteFrom kind": {resource: "apps", manifest: `
kind: App
metadata: {name: fromkind}
spec: {sourceRef: {kind: GitSource, name: repo}, substituteFrom: [{kind: File, name: vars}]}`,
			want: `"File" is not a kind variables come from; use ConfigMap or Secret`},
		"substituteStrict alone": {resource: "apps", manifest: `
kind: App
metadata: {name: strict}
spec: {sourceRef: {kind: GitSource, name: repo}, substituteStrict: true}`,
			want: `substituteStrict has no effect without substitute or substituteFrom; remove it, or set variables`},
		"depends on itself": {resource: "apps", manifest: `
kind: App
metadata: {name: selfdep}
spec: {sourceRef: {kind: GitSource, name: repo}, dependsOn: [db, selfdep]}`,
			want: `App "selfdep" depends on itself; remove it from its own spec.dependsOn`},
		"dependency not an App name": {resource: "apps", manifest: `
kind: App
metadata: {name: baddep}
spec: {sourceRef: {kind: GitSource, name: repo}, dependsOn: [Team/DB]}`,
			want: `"Team/DB" is not an App name`},
		"ignore rule without paths": {resource: "apps", manifest: `
kind: App
metadata: {name: ignorepaths}
spec: {sourceRef: {kind: GitSource, name: repo}, ignore: [{kinds: [ConfigMap]}]}`,
			want: `spec.ignore[0].paths: Required value`},
		"decryption provider": {resource: "apps", manifest: `
kind: App
metadata: {name: kms}
spec: {sourceRef: {kind: GitSource, name: repo}, decryption: {provider: kms, secretRef: {name: k}}}`,
			want: `"kms" is not a decryption provider; use sops`},
		"helm repository chart": {resource: "apps", manifest: `
kind: App
metadata: {name: helmrepo}
spec: {sourceRef: {kind: GitSource, name: repo}, helm: {chart: podinfo, version: "6.x"}}`,
			want: `chart and version pick a chart of a HelmSource, and this App's source is not one`},
		"helm chart of an OCISource": {resource: "apps", manifest: `
kind: App
metadata: {name: ocichart}
spec: {sourceRef: {kind: OCISource, name: bundle}, helm: {chart: podinfo}}`,
			want: `chart and version pick a chart of a HelmSource, and this App's source is not one`},
		"valid app of a HelmSource": {resource: "apps", manifest: `
kind: App
metadata: {name: chart}
spec: {sourceRef: {kind: HelmSource, name: charts}, helm: {chart: podinfo, version: "6.x", values: {replicaCount: 2}}}`},
		"HelmSource without chart": {resource: "apps", manifest: `
kind: App
metadata: {name: nochart}
spec: {sourceRef: {kind: HelmSource, name: charts}, helm: {version: "6.x"}}`,
			want: `the App's source is a HelmSource: name the chart to render from it in helm.chart`},
		"HelmSource with path": {resource: "apps", manifest: `
kind: App
metadata: {name: chartpath}
spec: {sourceRef: {kind: HelmSource, name: charts}, path: deploy, helm: {chart: podinfo}}`,
			want: `path is for GitSources and OCISources; the chart of a HelmSource is named by helm.chart: remove path`},
		"valid app of an OCISource": {resource: "apps", manifest: `
kind: App
metadata: {name: bundle}
spec: {sourceRef: {kind: OCISource, name: bundle}, path: deploy/prod}`},
		"helm values source": {resource: "apps", manifest: `
kind: App
metadata: {name: helmvalues}
spec: {sourceRef: {kind: GitSource, name: repo}, helm: {valuesSource: values, valuesFiles: [prod.yaml]}}`,
			want: `valuesSource names a source of syncd.yaml and is for the config file only`},
		"helm namespace against targetNamespace": {resource: "apps", manifest: `
kind: App
metadata: {name: helmns}
spec: {sourceRef: {kind: GitSource, name: repo}, targetNamespace: web, helm: {namespace: other}}`,
			want: `helm.namespace differs from targetNamespace`},
		"valid source": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: repo}
spec: {url: "https://example.com/org/repo.git", branch: main, interval: 1m}`},
		"no revision": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: norev}
spec: {url: "https://example.com/org/repo.git", interval: 1m}`,
			want: `no revision to follow; set one of branch, tag, semver or commit`},
		"two revisions": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: tworevs}
spec: {url: "https://example.com/org/repo.git", branch: main, tag: v1, interval: 1m}`,
			want: `keep exactly one of branch, tag, semver and commit`},
		"interval and schedule": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: both}
spec: {url: "https://example.com/org/repo.git", branch: main, interval: 1m, schedule: "@hourly"}`,
			want: `interval and schedule are both set; keep one`},
		"short commit": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: short}
spec: {url: "https://example.com/org/repo.git", commit: abc123, interval: 1m}`,
			want: `"abc123" is not a full commit hash`},
		"git protocol": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: gitproto}
spec: {url: "git://example.com/org/repo.git", branch: main, interval: 1m}`,
			want: `the git:// protocol is neither authenticated nor encrypted; use https or ssh`},
		"file URL": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: file}
spec: {url: "file:///var/cache/syncd/.app-objects/apps/team-b/web/repo/repo", branch: main, interval: 1m}`,
			want: `a file URL reads syncd's own disk, where other Apps' clones are`},
		"file URL, upper case": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: fileupper}
spec: {url: "FILE:/srv/git/app.git", branch: main, interval: 1m}`,
			want: `a file URL reads syncd's own disk`},
		"absolute URL path": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: abspath}
spec: {url: "/srv/git/app.git", branch: main, interval: 1m}`,
			want: `the URL is a local path, which reads syncd's own disk`},
		"relative path": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: relpath}
spec: {url: "../team-b/repo", branch: main, interval: 1m}`,
			want: `the URL is a local path, which reads syncd's own disk`},
		"OCI URL": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: ociurl}
spec: {url: "oci://ghcr.io/org/manifests", tag: "1.0.0", interval: 1m}`,
			want: `the URL scheme is not one Git fetches over`},
		"OCI URL, upper case": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: ociupper}
spec: {url: "OCI://ghcr.io/org/manifests", tag: "1.0.0", interval: 1m}`,
			want: `an oci:// artifact is an OCISource`},
		"HTTPS URL, upper case": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: httpsupper}
spec: {url: "HTTPS://example.com/org/repo.git", branch: main, interval: 1m}`},
		"ssh URL": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: sshurl}
spec: {url: "ssh://git@example.com/org/repo.git", branch: main, interval: 1m}`},
		"scp-like": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: scp}
spec: {url: "git@example.com:org/repo.git", branch: main, interval: 1m}`},
		"password in URL": {resource: "gitsources", manifest: `
kind: GitSource
metadata: {name: pw}
spec: {url: "https://user:hunter2@example.com/org/repo.git", branch: main, interval: 1m}`,
			want: `the URL embeds a password or token`},
		"valid HelmSource": {resource: "helmsources", manifest: `
kind: HelmSource
metadata: {name: charts}
spec: {url: "https://charts.example.com/stable", interval: 10m, secretRef: {name: charts-auth}}`},
		"valid HelmSource of a registry": {resource: "helmsources", manifest: `
kind: HelmSource
metadata: {name: registry-charts}
spec: {url: "oci://registry.example.com/charts", interval: 10m}`},
		"HelmSource without interval": {resource: "helmsources", manifest: `
kind: HelmSource
metadata: {name: nointerval}
spec: {url: "https://charts.example.com/stable"}`,
			want: `no polling interval; set interval, how often index.yaml is read (e.g. 10m)`},
		"HelmSource interval not positive": {resource: "helmsources", manifest: `
kind: HelmSource
metadata: {name: zero}
spec: {url: "https://charts.example.com/stable", interval: 0s}`,
			want: `interval must be positive, e.g. 10m`},
		"HelmSource file URL": {resource: "helmsources", manifest: `
kind: HelmSource
metadata: {name: helmfile}
spec: {url: "file:///var/cache/syncd/apps", interval: 10m}`,
			want: `a HelmSource fetches over the network (a file URL or a local path would read syncd's own disk`},
		"HelmSource local path": {resource: "helmsources", manifest: `
kind: HelmSource
metadata: {name: helmpath}
spec: {url: "/srv/charts", interval: 10m}`,
			want: `the URL is not an https://, http:// or oci:// URL`},
		"HelmSource password in URL": {resource: "helmsources", manifest: `
kind: HelmSource
metadata: {name: helmpw}
spec: {url: "https://robot:hunter2@charts.example.com/stable", interval: 10m}`,
			want: `the URL embeds credentials; remove them from the URL and put them in the Secret named by secretRef`},
		"valid OCISource": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: bundle}
spec: {url: "oci://registry.example.com/ops/bundle", semver: ">=1.0.0 <2.0.0", interval: 5m, secretRef: {name: registry}}`},
		"OCISource without version": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: noversion}
spec: {url: "oci://registry.example.com/ops/bundle", interval: 5m}`,
			want: `no version to follow; set one of tag, semver or digest`},
		"OCISource two versions": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: twoversions}
spec: {url: "oci://registry.example.com/ops/bundle", tag: latest, semver: "1.x", interval: 5m}`,
			want: `keep exactly one of tag, semver and digest`},
		"OCISource without interval": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: ocinointerval}
spec: {url: "oci://registry.example.com/ops/bundle", tag: latest}`,
			want: `no polling interval; set interval, how often the tag is resolved (e.g. 5m)`},
		"OCISource short digest": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: digest}
spec: {url: "oci://registry.example.com/ops/bundle", digest: "sha256:abc", interval: 5m}`,
			want: `"sha256:abc" is not a manifest digest; write sha256: and 64 lower-case hex digits`},
		"OCISource tag": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: badtag}
spec: {url: "oci://registry.example.com/ops/bundle", tag: "-v1", interval: 5m}`,
			want: `"-v1" is not an OCI tag`},
		"OCISource https URL": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: https}
spec: {url: "https://registry.example.com/ops/bundle", tag: latest, interval: 5m}`,
			want: `the URL is not an oci:// URL: an OCISource fetches from a registry over the network`},
		"OCISource file URL": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: ocifile}
spec: {url: "file:///var/cache/syncd", tag: latest, interval: 5m}`,
			want: `the URL is not an oci:// URL`},
		"OCISource password in URL": {resource: "ocisources", manifest: `
kind: OCISource
metadata: {name: ocipw}
spec: {url: "oci://robot:hunter2@registry.example.com/ops/bundle", tag: latest, interval: 5m}`,
			want: `the URL embeds credentials; remove them from the URL and put them in the Secret named by secretRef`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := object(t, tc.manifest)
			u.SetAPIVersion(v1alpha1.GroupVersion.String())
			gvr := v1alpha1.GroupVersion.WithResource(tc.resource)
			got, err := dyn.Resource(gvr).Namespace(ns).Create(context.Background(), u, metav1.CreateOptions{})
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("valid object refused: %v", err)
			case tc.want == "":
				if tc.resource == "apps" {
					if prune, _, _ := unstructuredBool(got.Object, "spec", "prune"); !prune {
						t.Errorf("spec.prune was not defaulted to true: %v", got.Object["spec"])
					}
				}
			case err == nil:
				t.Fatalf("invalid object accepted; want a refusal with %q", tc.want)
			case !strings.Contains(err.Error(), tc.want):
				t.Errorf("refusal = %v\nwant it to contain %q", err, tc.want)
			}
			if strings.Contains(err2s(err), "hunter2") {
				t.Errorf("the refusal echoes the password: %v", err)
			}
		})
	}
}

func err2s(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}
