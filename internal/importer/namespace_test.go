package importer

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// An object without metadata.namespace is imported into default, with
// one warning per object saying so and how to get the namespace a
// kustomization.yaml gives it.
func TestNoNamespaceIsWarned(t *testing.T) {
	const flux = `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts}
spec: {interval: 1h, url: https://charts.example.com}
---
apiVersion: helm.toolkit.fluxcd.io/v2
kind: HelmRelease
metadata: {name: loki}
spec:
  interval: 5m
  chart: {spec: {chart: loki, version: "6.x", sourceRef: {kind: HelmRepository, name: charts}}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: other, namespace: monitoring}
spec: {interval: 1h, url: https://charts.example.com}`
	const argo = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web}
spec:
  source: {repoURL: https://git.example.com/r.git, targetRevision: main, path: web, directory: {recurse: true}}
  destination: {server: https://kubernetes.default.svc, namespace: web}`
	for name, tc := range map[string]struct {
		tool      Tool
		doc       string
		namespace string
		// warned are the objects warned about, namespaces the
		// namespaces of the syncd objects.
		warned, namespaces []string
	}{
		"Flux": {tool: Flux, doc: flux,
			warned:     []string{"HelmRelease loki", "HelmRepository charts"},
			namespaces: []string{"default", "monitoring", "default"}},
		"Flux with -n": {tool: Flux, doc: flux, namespace: "obs",
			namespaces: []string{"obs", "obs", "obs"}},
		"Argo CD, one warning for its GitSource and App": {tool: ArgoCD, doc: argo,
			warned:     []string{"Application web"},
			namespaces: []string{"default", "default"}},
	} {
		t.Run(name, func(t *testing.T) {
			res := importYAML(t, tc.tool, Options{Namespace: tc.namespace}, tc.doc)
			var warned, namespaces []string
			for _, w := range res.Warnings {
				if w.Field == "metadata.namespace" && containsAll(w.Message, "imported into namespace default", "kustomize build DIR | syncd import "+string(tc.tool)+" -") {
					warned = append(warned, w.Object)
				}
			}
			for _, s := range res.GitSources {
				namespaces = append(namespaces, s.Namespace)
			}
			for _, s := range res.HelmSources {
				namespaces = append(namespaces, s.Namespace)
			}
			for _, a := range res.Apps {
				namespaces = append(namespaces, a.Namespace)
			}
			if diff := cmp.Diff(tc.warned, warned); diff != "" {
				t.Errorf("objects warned about (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.namespaces, namespaces); diff != "" {
				t.Errorf("namespaces of the syncd objects (-want +got):\n%s", diff)
			}
		})
	}
}
