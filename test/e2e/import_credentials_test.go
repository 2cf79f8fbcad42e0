package e2e

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// Credentials the imported objects carry in their URLs.
const (
	importUser   = "ci-Jb8wQ"
	importSecret = "Zq7xKw9Pv3mRtT4y"
)

// TestJourneyImportURLCredentials: Flux and Argo CD objects whose Git,
// Helm and OCI repository URLs carry credentials
// (https://user:secret@host/...). syncd import, objects and -o config,
// prints them without the credentials (no fragment of the secret, not
// even five bytes of it, nor the user name, on stdout, on stderr or in
// a file) and warns, naming the file, the object and the field, where
// the credentials go instead: keys of the Secret the source names, or
// with -o config the files the syncd.yaml reads. The objects printed
// are admitted by the API server as they are.
func TestJourneyImportURLCredentials(t *testing.T) {
	w := newWorkspace(t)
	const ns = "import-creds-e2e"
	ensureNamespace(t, ns)
	cred := importUser + ":" + importSecret + "@"
	w.file("flux/sources.yaml", `apiVersion: source.toolkit.fluxcd.io/v1
kind: GitRepository
metadata: {name: deploy, namespace: flux-system}
spec: {interval: 1m, url: "https://`+cred+`git.example.com/team/deploy.git", ref: {branch: main}}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: HelmRepository
metadata: {name: charts, namespace: flux-system}
spec: {interval: 1h, url: "https://`+cred+`charts.example.com/stable"}
---
apiVersion: source.toolkit.fluxcd.io/v1
kind: OCIRepository
metadata: {name: manifests, namespace: flux-system}
spec: {interval: 1h, url: "oci://`+cred+`ghcr.io/org/manifests", ref: {tag: "1.0.0"}}
`)
	w.file("flux/apps.yaml", `apiVersion: kustomize.toolkit.fluxcd.io/v1
kind: Kustomization
metadata: {name: web, namespace: flux-system}
spec: {interval: 5m, path: ./web, prune: true, sourceRef: {kind: GitRepository, name: deploy}, targetNamespace: web}
`)
	w.file("argo/apps.yaml", `apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: web, namespace: argocd}
spec:
  source: {repoURL: "https://`+cred+`git.example.com/team/deploy.git", targetRevision: main, path: web}
  destination: {server: https://kubernetes.default.svc, namespace: web}
---
apiVersion: argoproj.io/v1alpha1
kind: Application
metadata: {name: chart, namespace: argocd}
spec:
  source: {repoURL: "https://`+cred+`charts.example.com/stable", chart: web, targetRevision: 1.2.3}
  destination: {server: https://kubernetes.default.svc, namespace: web}
`)
	inputs := map[string]bool{filepath.Join(w.dir, "flux"): true, filepath.Join(w.dir, "argo"): true}

	// credWarning is the start of the warning about the URL at field of
	// object in file, and advice what it says to do.
	type credWarning struct{ file, object, field, advice string }
	const embeds = "the URL embeds credentials, which the import removed from it (they are not printed, and syncd refuses a URL that holds them): "
	for name, tc := range map[string]struct {
		args     []string
		want     []string // lines of stdout
		warnings []credWarning
	}{
		"flux objects": {
			args: []string{"import", "flux", "-n", ns, "flux"},
			want: []string{"url: https://git.example.com/team/deploy.git", "url: https://charts.example.com/stable", "url: oci://ghcr.io/org/manifests",
				"name: deploy-git-auth", "name: charts-helm-auth", "name: manifests-oci-auth"},
			warnings: []credWarning{
				{"flux/sources.yaml", "GitRepository flux-system/deploy", "spec.url", "put the password or token in key token and the user name in key username of Secret " + ns + "/deploy-git-auth, which GitSource " + ns + "/deploy names in spec.secretRef"},
				{"flux/sources.yaml", "HelmRepository flux-system/charts", "spec.url", "put the user name and password in keys username and password (or a token in key token) of Secret " + ns + "/charts-helm-auth, which HelmSource " + ns + "/charts names in spec.secretRef"},
				{"flux/sources.yaml", "OCIRepository flux-system/manifests", "spec.url", "of Secret " + ns + "/manifests-oci-auth, which OCISource " + ns + "/manifests names in spec.secretRef"},
			},
		},
		"flux config": {
			args: []string{"import", "flux", "-o", "config", "flux"},
			want: []string{"url: https://git.example.com/team/deploy.git", "tokenFile: /etc/syncd/secrets/deploy-git-auth/token",
				"url: https://charts.example.com/stable", "passwordFile: /etc/syncd/secrets/charts-helm-auth/password",
				"url: oci://ghcr.io/org/manifests", "dockerConfigFile: /etc/syncd/secrets/manifests-oci-auth/.dockerconfigjson"},
			warnings: []credWarning{
				{"flux/sources.yaml", "GitRepository flux-system/deploy", "spec.url", "source deploy of the syncd.yaml reads them from files below /etc/syncd/secrets/deploy-git-auth (mount a Secret deploy-git-auth there): put"},
				{"flux/sources.yaml", "HelmRepository flux-system/charts", "spec.url", "source charts of the syncd.yaml reads them from files below /etc/syncd/secrets/charts-helm-auth"},
				{"flux/sources.yaml", "OCIRepository flux-system/manifests", "spec.url", "source manifests of the syncd.yaml reads them from files below /etc/syncd/secrets/manifests-oci-auth"},
			},
		},
		"argocd objects": {
			args: []string{"import", "argocd", "-n", ns, "argo"},
			want: []string{"url: https://git.example.com/team/deploy.git", "url: https://charts.example.com/stable", "name: deploy-git-auth", "name: charts-example-com-helm-auth"},
			warnings: []credWarning{
				{"argo/apps.yaml", "Application argocd/web", "spec.source.repoURL", "of Secret " + ns + "/deploy-git-auth, which GitSource " + ns + "/deploy names in spec.secretRef"},
				{"argo/apps.yaml", "Application argocd/chart", "spec.source.repoURL", "of Secret " + ns + "/charts-example-com-helm-auth, which HelmSource " + ns + "/charts-example-com names in spec.secretRef"},
			},
		},
		"argocd config": {
			args: []string{"import", "argocd", "-o", "config", "argo"},
			want: []string{"url: https://git.example.com/team/deploy.git", "tokenFile: /etc/syncd/secrets/deploy-git-auth/token",
				"url: https://charts.example.com/stable", "passwordFile: /etc/syncd/secrets/charts-example-com-helm-auth/password"},
			warnings: []credWarning{
				{"argo/apps.yaml", "Application argocd/web", "spec.source.repoURL", "reads them from files below /etc/syncd/secrets/deploy-git-auth"},
				{"argo/apps.yaml", "Application argocd/chart", "spec.source.repoURL", "reads them from files below /etc/syncd/secrets/charts-example-com-helm-auth"},
			},
		},
	} {
		r := w.syncdIn(w.dir, tc.args...)
		if r.code != exitOK {
			t.Errorf("%s: want exit 0\n%s", name, r)
			continue
		}
		for _, line := range tc.want {
			if !strings.Contains(r.stdout, line+"\n") {
				t.Errorf("%s: stdout lacks the line %q\n%s", name, line, r)
			}
		}
		for _, cw := range tc.warnings {
			start := "warning: " + cw.file + ": " + cw.object + ": " + cw.field + ": " + embeds
			if !hasLine(r.stderr, start, cw.advice) {
				t.Errorf("%s: no warning %q...%q\n%s", name, start, cw.advice, r)
			}
		}
		// What a user redirects to a file and applies.
		out := w.file("out/"+strings.ReplaceAll(name, " ", "-")+".yaml", r.stdout)
		if strings.HasSuffix(name, "objects") {
			got := mustKubectl(t, "apply", "--dry-run=server", "-f", out)
			if !strings.Contains(got, "created (server dry run)") {
				t.Errorf("%s: kubectl apply --dry-run=server of the imported objects:\n%s", name, got)
			}
		}
	}

	w.checkNoSecrets(importUser)
	checkNoRun(t, importSecret, 5, w.printedText(), writtenFiles(t, w.dir, inputs))
}

// hasLine reports whether a line of s starts with start and holds part.
func hasLine(s, start, part string) bool {
	for _, line := range strings.Split(s, "\n") {
		if strings.HasPrefix(line, start) && strings.Contains(line, part) {
			return true
		}
	}
	return false
}

// printedText is everything syncd printed in this workspace.
func (w *workspace) printedText() string {
	w.mu.Lock()
	defer w.mu.Unlock()
	return strings.Join(w.printed, "\n")
}

// writtenFiles reads every file below dir, by path, except those below
// the directories in skip (a journey's inputs).
func writtenFiles(t *testing.T, dir string, skip map[string]bool) map[string]string {
	t.Helper()
	files := map[string]string{}
	err := filepath.WalkDir(dir, func(p string, e os.DirEntry, err error) error {
		switch {
		case err != nil:
			return err
		case e.IsDir() && skip[p]:
			return filepath.SkipDir
		case e.IsDir():
			return nil
		}
		b, err := os.ReadFile(p)
		files[p] = string(b)
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

// checkNoRun fails the test when any n-byte run of secret appears in
// printed or in one of files.
func checkNoRun(t *testing.T, secret string, n int, printed string, files map[string]string) {
	t.Helper()
	texts := map[string]string{"what syncd printed": printed}
	for p, s := range files {
		texts[p] = s
	}
	for where, text := range texts {
		for i := 0; i+n <= len(secret); i++ {
			if j := strings.Index(text, secret[i:i+n]); j >= 0 {
				lo, hi := max(0, j-100), min(len(text), j+n+100)
				t.Errorf("%s holds %q, %d bytes of the secret:\n...%s...", where, secret[i:i+n], n, text[lo:hi])
				break
			}
		}
	}
}
