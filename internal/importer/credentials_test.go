package importer

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
)

func TestWithoutCredentials(t *testing.T) {
	type result struct {
		URL     string
		Removed bool
	}
	for raw, want := range map[string]result{
		"https://deploy-bot:glpat-SECRET123@git.example.com/team/deploy.git": {URL: "https://git.example.com/team/deploy.git", Removed: true},
		"https://ghp_TOKEN@github.com/org/repo.git":                          {URL: "https://github.com/org/repo.git", Removed: true},
		"HTTP://u:p@localhost:8080/r.git?x=1":                                {URL: "HTTP://localhost:8080/r.git?x=1", Removed: true},
		"oci://robot:pw@ghcr.io/org/manifests":                               {URL: "oci://ghcr.io/org/manifests", Removed: true},
		"https://user:p@ss@charts.example.com/stable":                        {URL: "https://charts.example.com/stable", Removed: true},
		"ssh://git:secret@github.com/org/repo.git":                           {URL: "ssh://git@github.com/org/repo.git", Removed: true},
		"ssh://git@github.com/org/repo.git":                                  {URL: "ssh://git@github.com/org/repo.git"},
		"git@github.com:org/repo.git":                                        {URL: "git@github.com:org/repo.git"},
		"https://git.example.com/team/deploy.git":                            {URL: "https://git.example.com/team/deploy.git"},
		"https://git.example.com/users/@me/repo.git":                         {URL: "https://git.example.com/users/@me/repo.git"},
		"ghcr.io/org/charts":                                                 {URL: "ghcr.io/org/charts"},
	} {
		t.Run(raw, func(t *testing.T) {
			var got result
			got.URL, got.Removed = withoutCredentials(raw)
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("withoutCredentials(%q) (-want +got):\n%s", raw, diff)
			}
		})
	}
}

// The imported objects of each case hold credentials in their URLs:
// neither the objects, the syncd.yaml nor the warnings may print them,
// the source names a Secret for them, and a warning about the URL's
// field says what to put in it.
func TestURLCredentialsAreRemoved(t *testing.T) {
	const secret = "s3cr3t-VALUE"
	const user = "deploy-bot"
	for name, tc := range map[string]struct {
		tool   Tool
		doc    string
		object string // of the warning
		field  string
		// objectWant are the lines the object form prints, configWant
		// those of the syncd.yaml.
		objectWant, configWant []string
	}{
		"Flux GitRepository": {tool: Flux, doc: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: deploy, namespace: flux-system}
spec: {interval: 1m, url: "https://` + user + `:` + secret + `@git.example.com/team/deploy.git", ref: {branch: main}}`,
			object: "GitRepository flux-system/deploy", field: "spec.url",
			objectWant: []string{"url: https://git.example.com/team/deploy.git", "name: deploy-git-auth"},
			configWant: []string{"url: https://git.example.com/team/deploy.git", "tokenFile: /etc/syncd/secrets/deploy-git-auth/token"}},
		"Flux GitRepository with its own secretRef": {tool: Flux, doc: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: deploy, namespace: flux-system}
spec: {interval: 1m, url: "https://` + user + `:` + secret + `@git.example.com/team/deploy.git", ref: {branch: main}, secretRef: {name: deploy-creds}}`,
			object: "GitRepository flux-system/deploy", field: "spec.url",
			objectWant: []string{"url: https://git.example.com/team/deploy.git", "name: deploy-creds"},
			configWant: []string{"tokenFile: /etc/syncd/secrets/deploy-creds/token"}},
		"Flux HelmRepository": {tool: Flux, doc: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec: {interval: 1h, url: "https://` + user + `:` + secret + `@charts.example.com/stable"}`,
			object: "HelmRepository flux-system/charts", field: "spec.url",
			objectWant: []string{"url: https://charts.example.com/stable", "name: charts-helm-auth"},
			configWant: []string{"url: https://charts.example.com/stable", "passwordFile: /etc/syncd/secrets/charts-helm-auth/password"}},
		"Flux OCIRepository": {tool: Flux, doc: `
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: manifests, namespace: flux-system}
spec: {interval: 1h, url: "oci://` + user + `:` + secret + `@ghcr.io/org/manifests", ref: {tag: "1.0.0"}}`,
			object: "OCIRepository flux-system/manifests", field: "spec.url",
			objectWant: []string{"url: oci://ghcr.io/org/manifests", "name: manifests-oci-auth"},
			configWant: []string{"url: oci://ghcr.io/org/manifests", "dockerConfigFile: /etc/syncd/secrets/manifests-oci-auth/.dockerconfigjson"}},
		"Argo CD Git repository": {tool: ArgoCD, doc: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  source: {repoURL: "https://` + user + `:` + secret + `@git.example.com/team/deploy.git", targetRevision: main, path: web}
  destination: {server: https://kubernetes.default.svc, namespace: web}`,
			object: "Application argocd/web", field: "spec.source.repoURL",
			objectWant: []string{"url: https://git.example.com/team/deploy.git", "name: deploy-git-auth"},
			configWant: []string{"url: https://git.example.com/team/deploy.git", "tokenFile: /etc/syncd/secrets/deploy-git-auth/token"}},
		"Argo CD chart repository": {tool: ArgoCD, doc: `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  source: {repoURL: "https://` + user + `:` + secret + `@charts.example.com/stable", chart: web, targetRevision: 1.2.3}
  destination: {server: https://kubernetes.default.svc, namespace: web}`,
			object: "Application argocd/web", field: "spec.source.repoURL",
			objectWant: []string{"url: https://charts.example.com/stable", "name: charts-example-com-helm-auth"},
			configWant: []string{"url: https://charts.example.com/stable", "passwordFile: /etc/syncd/secrets/charts-example-com-helm-auth/password"}},
	} {
		for _, form := range []Form{ObjectsForm, ConfigForm} {
			t.Run(name+"/"+string(form), func(t *testing.T) {
				res := importYAML(t, tc.tool, Options{Form: form}, tc.doc)
				out, warnings := printed(t, res, form)
				all := out + strings.Join(warnings, "\n")
				for _, leak := range []string{secret, user, "s3cr3t"} {
					if strings.Contains(all, leak) {
						t.Errorf("%q is printed:\n%s", leak, all)
					}
				}
				want := tc.objectWant
				if form == ConfigForm {
					want = tc.configWant
				}
				for _, line := range want {
					if !strings.Contains(out, line) {
						t.Errorf("the output has no line %q:\n%s", line, out)
					}
				}
				advice := map[Form]string{ObjectsForm: "spec.secretRef", ConfigForm: "reads them from files below /etc/syncd/secrets/"}[form]
				if !hasWarning(res.Warnings, tc.object, tc.field, "the URL embeds credentials", advice) {
					t.Errorf("no warning about %s %s saying %q; warnings:\n%s", tc.object, tc.field, advice, strings.Join(warnings, "\n"))
				}
			})
		}
	}
}

// printed is what syncd import prints of res in form: the objects or
// the syncd.yaml (which must load), and every warning.
func printed(t *testing.T, res *Result, form Form) (string, []string) {
	t.Helper()
	var out bytes.Buffer
	ws := res.Warnings
	if form == ConfigForm {
		cfg, more := res.Config()
		ws = append(ws, more...)
		if err := WriteConfig(&out, cfg); err != nil {
			t.Fatal(err)
		}
		if _, err := config.Parse(out.Bytes(), "syncd.yaml"); err != nil {
			t.Errorf("the syncd.yaml does not load: %v\n%s", err, out.String())
		}
	} else if err := res.WriteObjects(&out); err != nil {
		t.Fatal(err)
	}
	var lines []string
	for _, w := range ws {
		lines = append(lines, w.String())
	}
	return out.String(), lines
}

// An ssh repository always needs credentials (an SSH key and the
// server's host keys): the source names a Secret for them, the
// syncd.yaml reads its files (and loads), and the warnings speak of the
// form printed.
func TestSSHRepositoryNeedsAKey(t *testing.T) {
	const argo = `
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: shop, namespace: argocd}
spec:
  source: {repoURL: "git@github.com:org/shop.git", targetRevision: main, path: deploy}
  destination: {server: https://kubernetes.default.svc, namespace: shop}`
	const flux = `
apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: shop, namespace: flux-system}
spec: {interval: 1m, url: "ssh://git@github.com/org/shop.git", ref: {branch: main}}`
	for name, tc := range map[string]struct {
		tool Tool
		doc  string
		form Form
		// want are lines of the output; warning is a part of a warning
		// of the import or the syncd.yaml, and notWarned no part of one.
		want               []string
		warning, notWarned string
	}{
		"Argo CD, objects": {tool: ArgoCD, doc: argo, form: ObjectsForm,
			want:    []string{"url: git@github.com:org/shop.git", "name: shop-git-auth"},
			warning: "key identity and the server's host keys in key known_hosts of Secret argocd/shop-git-auth, which GitSource argocd/shop names in spec.secretRef"},
		"Argo CD, syncd.yaml": {tool: ArgoCD, doc: argo, form: ConfigForm,
			want:    []string{"sshKeyFile: /etc/syncd/secrets/shop-git-auth/identity", "knownHostsFile: /etc/syncd/secrets/shop-git-auth/known_hosts"},
			warning: "auth.sshKeyFile and auth.knownHostsFile", notWarned: "spec.secretRef"},
		"Flux without secretRef, syncd.yaml": {tool: Flux, doc: flux, form: ConfigForm,
			want:    []string{"sshKeyFile: /etc/syncd/secrets/shop-git-auth/identity", "knownHostsFile: /etc/syncd/secrets/shop-git-auth/known_hosts"},
			warning: "mount a Secret shop-git-auth with keys identity and known_hosts at /etc/syncd/secrets/shop-git-auth"},
	} {
		t.Run(name, func(t *testing.T) {
			res := importYAML(t, tc.tool, Options{Form: tc.form}, tc.doc)
			out, warnings := printed(t, res, tc.form)
			for _, line := range tc.want {
				if !strings.Contains(out, line) {
					t.Errorf("the output has no line %q:\n%s", line, out)
				}
			}
			all := strings.Join(warnings, "\n")
			if !strings.Contains(all, tc.warning) {
				t.Errorf("no warning says %q:\n%s", tc.warning, all)
			}
			if tc.notWarned != "" && strings.Contains(all, tc.notWarned) {
				t.Errorf("a warning of the file form speaks of %q:\n%s", tc.notWarned, all)
			}
		})
	}
}
