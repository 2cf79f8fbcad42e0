package importer

import (
	"bytes"
	"strings"
	"testing"
)

// password is the credential the cases write in wrongly typed values:
// no run of passwordRun bytes of it may be printed.
const (
	password    = "s3cr3tPassw0rd"
	passwordRun = 5
)

// TestImportMalformed imports objects with a field of the wrong type,
// or a key given twice: the object is not imported, and a warning names
// the file, the object and the field, says what the field must be and
// what to do; a credential in the bad value is never printed.
func TestImportMalformed(t *testing.T) {
	for name, tc := range map[string]struct {
		tool   Tool
		yaml   string
		object string
		field  string
		want   []string
	}{
		"flux GitRepository spec a string": {
			tool: Flux, yaml: gitRepository(`spec: "https://user:` + password + `@h/x.git"`),
			object: "GitRepository flux-system/app", field: "spec",
			want: []string{"must be a map, not a string", "the GitRepository is not imported"},
		},
		"flux GitRepository url a list holding a credential": {
			tool: Flux, yaml: gitRepository("spec:\n  interval: 1m\n  url: [https://user:" + password + "@h/x.git]"),
			object: "GitRepository flux-system/app", field: "spec.url",
			want: []string{"must be a string, not a list", "give one value", "not imported"},
		},
		"flux GitRepository url a map": {
			tool: Flux, yaml: gitRepository("spec:\n  url:\n    https: h/x.git"),
			object: "GitRepository flux-system/app", field: "spec.url",
			want: []string{"must be a string, not a map", "not imported"},
		},
		"flux GitRepository url given twice": {
			tool: Flux, yaml: gitRepository("spec:\n  url: https://user:" + password + "@h/x.git\n  interval: 1m\n  url: https://h/y.git"),
			object: "GitRepository flux-system/app",
			want:   []string{`key "url" is given twice (again at line 9)`, "remove one", "not imported"},
		},
		"flux GitRepository url given twice in a file's second document": {
			tool: Flux, yaml: "values: {}\n---\n" + gitRepository("spec:\n  url: https://h/x.git\n  url: https://h/y.git"),
			object: "GitRepository flux-system/app",
			want:   []string{`key "url" is given twice (again at line 10)`, "not imported"},
		},
		"flux GitRepository ref a string": {
			tool: Flux, yaml: gitRepository("spec:\n  url: https://h/x.git\n  ref: main"),
			object: "GitRepository flux-system/app", field: "spec.ref",
			want: []string{"must be a map, not a string", "not imported"},
		},
		"flux GitRepository tag a number": {
			tool: Flux, yaml: gitRepository("spec:\n  url: https://h/x.git\n  ref:\n    tag: 1.10"),
			object: "GitRepository flux-system/app", field: "spec.ref.tag",
			want: []string{"must be a string, not a number", "quote", "not imported"},
		},
		"flux HelmRepository url a list": {
			tool: Flux, yaml: fluxObject("source.toolkit.fluxcd.io/v1", "HelmRepository", "spec:\n  url:\n  - https://user:"+password+"@charts.h"),
			object: "HelmRepository flux-system/app", field: "spec.url",
			want: []string{"must be a string, not a list", "the HelmRepository is not imported"},
		},
		"flux OCIRepository insecure a string": {
			tool: Flux, yaml: fluxObject("source.toolkit.fluxcd.io/v1", "OCIRepository", "spec:\n  url: oci://h/x\n  insecure: \"true\""),
			object: "OCIRepository flux-system/app", field: "spec.insecure",
			want: []string{"must be a boolean, not a string", "without quotes", "not imported"},
		},
		"flux OCIRepository ref a list": {
			tool: Flux, yaml: fluxObject("source.toolkit.fluxcd.io/v1", "OCIRepository", "spec:\n  url: oci://h/x\n  ref: [tag: v1]"),
			object: "OCIRepository flux-system/app", field: "spec.ref",
			want: []string{"must be a map, not a list", "not imported"},
		},
		"flux Kustomization sourceRef a string": {
			tool: Flux, yaml: kustomization("  sourceRef: flux-system\n  path: ./apps"),
			object: "Kustomization flux-system/app", field: "spec.sourceRef",
			want: []string{"must be a map, not a string", "the Kustomization is not imported"},
		},
		"flux Kustomization prune a string": {
			tool: Flux, yaml: kustomization("  sourceRef: {kind: GitRepository, name: flux-system}\n  prune: \"true\""),
			object: "Kustomization flux-system/app", field: "spec.prune",
			want: []string{"must be a boolean, not a string", "not imported"},
		},
		"flux Kustomization path a list": {
			tool: Flux, yaml: kustomization("  sourceRef: {kind: GitRepository, name: flux-system}\n  path: [./a, ./b]"),
			object: "Kustomization flux-system/app", field: "spec.path",
			want: []string{"must be a string, not a list", "not imported"},
		},
		"flux Kustomization dependsOn item a string": {
			tool: Flux, yaml: kustomization("  sourceRef: {kind: GitRepository, name: flux-system}\n  dependsOn: [infra]"),
			object: "Kustomization flux-system/app", field: "spec.dependsOn[0]",
			want: []string{"must be a map, not a string", "not imported"},
		},
		"flux Kustomization dependsOn a map": {
			tool: Flux, yaml: kustomization("  sourceRef: {kind: GitRepository, name: flux-system}\n  dependsOn: {name: infra}"),
			object: "Kustomization flux-system/app", field: "spec.dependsOn",
			want: []string{"must be a list, not a map", "not imported"},
		},
		"flux HelmRelease chart a string": {
			tool: Flux, yaml: fluxObject("helm.toolkit.fluxcd.io/v2", "HelmRelease", "spec:\n  chart: podinfo"),
			object: "HelmRelease flux-system/app", field: "spec.chart",
			want: []string{"must be a map, not a string", "the HelmRelease is not imported"},
		},
		"flux HelmRelease version a number": {
			tool: Flux, yaml: fluxObject("helm.toolkit.fluxcd.io/v2", "HelmRelease", "spec:\n  chart:\n    spec:\n      chart: podinfo\n      version: 6.10\n      sourceRef: {kind: HelmRepository, name: podinfo}"),
			object: "HelmRelease flux-system/app", field: "spec.chart.spec.version",
			want: []string{"must be a string, not a number", "quote", "not imported"},
		},
		"flux HelmRelease values a string": {
			tool: Flux, yaml: fluxObject("helm.toolkit.fluxcd.io/v2", "HelmRelease", "spec:\n  chart:\n    spec:\n      chart: podinfo\n      sourceRef: {kind: HelmRepository, name: podinfo}\n  values: \"password: "+password+"\""),
			object: "HelmRelease flux-system/app", field: "spec.values",
			want: []string{"must be a map, not a string", "not imported"},
		},
		"flux metadata.name a list": {
			tool: Flux, yaml: "apiVersion: source.toolkit.fluxcd.io/v1\nkind: GitRepository\nmetadata:\n  name: [app]\n  namespace: flux-system\nspec:\n  url: https://h/x.git",
			object: "GitRepository flux-system/", field: "metadata.name",
			want: []string{"must be a string, not a list", "not imported"},
		},
		"argocd source a string": {
			tool: ArgoCD, yaml: application("  source: https://user:" + password + "@h/x.git"),
			object: "Application argocd/app", field: "spec.source",
			want: []string{"must be a map, not a string", "the Application is not imported"},
		},
		"argocd repoURL a list holding a credential": {
			tool: ArgoCD, yaml: application("  source:\n    repoURL: [https://user:" + password + "@h/x.git]\n    path: app"),
			object: "Application argocd/app", field: "spec.source.repoURL",
			want: []string{"must be a string, not a list", "not imported"},
		},
		"argocd sources a map": {
			tool: ArgoCD, yaml: application("  sources:\n    repoURL: https://h/x.git\n    path: app"),
			object: "Application argocd/app", field: "spec.sources",
			want: []string{"must be a list, not a map", "not imported"},
		},
		"argocd targetRevision a number": {
			tool: ArgoCD, yaml: application("  source:\n    repoURL: https://h/x.git\n    path: app\n    targetRevision: 1.10"),
			object: "Application argocd/app", field: "spec.source.targetRevision",
			want: []string{"must be a string, not a number", "quote", "not imported"},
		},
		"argocd destination a string": {
			tool: ArgoCD, yaml: strings.Replace(application("  source:\n    repoURL: https://h/x.git\n    path: app"), "destination: {server: https://kubernetes.default.svc, namespace: app}", "destination: in-cluster", 1),
			object: "Application argocd/app", field: "spec.destination",
			want: []string{"must be a map, not a string", "not imported"},
		},
		"argocd automated a boolean": {
			tool: ArgoCD, yaml: application("  source:\n    repoURL: https://h/x.git\n    path: app\n  syncPolicy:\n    automated: true"),
			object: "Application argocd/app", field: "spec.syncPolicy.automated",
			want: []string{"must be a map, not a boolean", "not imported"},
		},
		"argocd valueFiles a string": {
			tool: ArgoCD, yaml: application("  source:\n    repoURL: https://h/x.git\n    path: app\n    helm:\n      valueFiles: values.yaml"),
			object: "Application argocd/app", field: "spec.source.helm.valueFiles",
			want: []string{"must be a list, not a string", "not imported"},
		},
		"argocd repoURL given twice": {
			tool: ArgoCD, yaml: application("  source:\n    repoURL: https://user:" + password + "@h/x.git\n    path: app\n    repoURL: https://h/y.git"),
			object: "Application argocd/app",
			want:   []string{`key "repoURL" is given twice`, "not imported"},
		},
	} {
		t.Run(name, func(t *testing.T) {
			res := importYAML(t, tc.tool, Options{}, tc.yaml)
			if n := len(res.GitSources) + len(res.HelmSources) + len(res.OCISources) + len(res.Apps); n != 0 {
				t.Errorf("%d objects imported, want none", n)
			}
			if !hasWarning(res.Warnings, tc.object, tc.field, tc.want...) {
				t.Errorf("no warning about %s %s with %q; got:\n%s", tc.object, tc.field, tc.want, warningLines(res.Warnings))
			}
			var out bytes.Buffer
			if err := res.WriteObjects(&out); err != nil {
				t.Fatal(err)
			}
			out.WriteString(warningLines(res.Warnings))
			if run, ok := secretRun(out.String(), password, passwordRun); ok {
				t.Errorf("the output prints %q of the password:\n%s", run, out.String())
			}
		})
	}
}

// warningLines prints ws one a line.
func warningLines(ws []Warning) string {
	var b strings.Builder
	for _, w := range ws {
		b.WriteString(w.String() + "\n")
	}
	return b.String()
}

// secretRun returns a run of n bytes of secret that s contains.
func secretRun(s, secret string, n int) (string, bool) {
	for i := 0; i+n <= len(secret); i++ {
		if strings.Contains(s, secret[i:i+n]) {
			return secret[i : i+n], true
		}
	}
	return "", false
}

// fluxObject is a Flux object flux-system/app of apiVersion and kind
// with the YAML body (spec: ...).
func fluxObject(apiVersion, kind, body string) string {
	return "apiVersion: " + apiVersion + "\nkind: " + kind + "\nmetadata:\n  name: app\n  namespace: flux-system\n" + body + "\n"
}

// gitRepository is a GitRepository flux-system/app with body.
func gitRepository(body string) string {
	return fluxObject("source.toolkit.fluxcd.io/v1", "GitRepository", body)
}

// kustomization is a Kustomization flux-system/app with the spec
// fields of body (indented).
func kustomization(body string) string {
	return fluxObject("kustomize.toolkit.fluxcd.io/v1", "Kustomization", "spec:\n  interval: 10m\n"+body)
}

// application is an Application argocd/app with the spec fields of
// body (indented).
func application(body string) string {
	return "apiVersion: argoproj.io/v1alpha1\nkind: Application\nmetadata:\n  name: app\n  namespace: argocd\nspec:\n  project: default\n  destination: {server: https://kubernetes.default.svc, namespace: app}\n" + body + "\n"
}
