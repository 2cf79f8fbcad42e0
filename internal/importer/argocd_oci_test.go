package importer

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
)

// An Application of an oci:// repository without a chart is an
// artifact of manifests: an OCISource, never a GitSource.
func TestArgoOCIArtifactIsAnOCISource(t *testing.T) {
	type imported struct {
		Git, Helm int
		OCI       []v1alpha1.OCISourceSpec
		SourceRef v1alpha1.SourceReference
		Path      string
	}
	interval := mustDuration(argoDefaultInterval)
	for name, tc := range map[string]struct {
		revision string
		want     config.OCIRef
	}{
		"tag":    {revision: "1.0.0", want: config.OCIRef{Tag: "1.0.0", Interval: interval}},
		"semver": {revision: ">=1.0.0 <2.0.0", want: config.OCIRef{Semver: ">=1.0.0 <2.0.0", Interval: interval}},
		"digest": {revision: "sha256:" + sha256Hex, want: config.OCIRef{Digest: "sha256:" + sha256Hex, Interval: interval}},
		"none":   {want: config.OCIRef{Tag: "latest", Interval: interval}},
	} {
		t.Run(name, func(t *testing.T) {
			res := importYAML(t, ArgoCD, Options{}, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: manifests, namespace: argocd}
spec:
  source: {repoURL: "oci://ghcr.io/org/manifests", targetRevision: "`+tc.revision+`", path: ./deploy}
  destination: {server: https://kubernetes.default.svc, namespace: web}
  syncPolicy: {automated: {prune: true, selfHeal: true}}`)
			var got imported
			got.Git, got.Helm = len(res.GitSources), len(res.HelmSources)
			for _, o := range res.OCISources {
				got.OCI = append(got.OCI, o.Spec)
			}
			if len(res.Apps) == 1 {
				got.SourceRef, got.Path = res.Apps[0].Spec.SourceRef, res.Apps[0].Spec.Path
			}
			want := imported{
				OCI:       []v1alpha1.OCISourceSpec{{URL: "oci://ghcr.io/org/manifests", OCIRef: tc.want}},
				SourceRef: v1alpha1.SourceReference{Kind: v1alpha1.KindOCISource, Name: "manifests"},
				Path:      "deploy",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("imported (-want +got):\n%s", diff)
			}
			if !hasWarning(res.Warnings, "Application argocd/manifests", "spec.source.repoURL", "tar+gzip") {
				t.Errorf("no warning says what the OCISource extracts: %v", res.Warnings)
			}
			_, _ = printed(t, res, ConfigForm) // the syncd.yaml loads
		})
	}
}

const sha256Hex = "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
