package importer

import (
	"strings"
	"testing"
)

// Argo CD applies only the top of a plain directory unless
// directory.recurse is true, syncd all of it: the importer warns
// whenever the source may be a plain directory and recurse is not true.
func TestArgoDirectoryRecurse(t *testing.T) {
	const field = "spec.source.directory.recurse"
	for name, tc := range map[string]struct {
		source string
		want   string // a part of the warning about recurse; "" none
	}{
		"no directory section":   {source: `{repoURL: https://git.example.com/r.git, targetRevision: main, path: web}`, want: "not set, and if the path is a plain directory"},
		"recurse not set":        {source: `{repoURL: https://git.example.com/r.git, targetRevision: main, path: web, directory: {exclude: "x"}}`, want: "not true: Argo CD applies only the manifests at the top of web"},
		"recurse false":          {source: `{repoURL: https://git.example.com/r.git, targetRevision: main, path: web, directory: {recurse: false}}`, want: "subdirectories included"},
		"recurse true":           {source: `{repoURL: https://git.example.com/r.git, targetRevision: main, path: web, directory: {recurse: true}}`},
		"kustomize section":      {source: `{repoURL: https://git.example.com/r.git, targetRevision: main, path: web, kustomize: {namePrefix: a-}}`},
		"helm section":           {source: `{repoURL: https://git.example.com/r.git, targetRevision: main, path: web, helm: {releaseName: web}}`},
		"chart":                  {source: `{repoURL: https://charts.example.com, chart: web, targetRevision: 1.0.0}`},
		"root of the repository": {source: `{repoURL: https://git.example.com/r.git, targetRevision: main, path: .}`, want: "at the top of the repository root"},
	} {
		t.Run(name, func(t *testing.T) {
			res := importYAML(t, ArgoCD, Options{}, `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  source: `+tc.source+`
  destination: {server: https://kubernetes.default.svc, namespace: web}`)
			got := warningsAbout(res.Warnings, "Application argocd/web", field)
			switch {
			case tc.want == "" && len(got) > 0:
				t.Errorf("warned: %q", got)
			case tc.want != "" && !hasWarning(res.Warnings, "Application argocd/web", field, tc.want, "move subdirectories that must not be applied out of the App's path"):
				t.Errorf("no warning about %s says %q; got %q", field, tc.want, strings.Join(got, "\n"))
			}
		})
	}
}
