package controller

import (
	"context"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// clones are the Git clones below a cache root (directories holding a
// HEAD file and an objects directory).
func clones(t *testing.T, root string) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(root, func(p string, d fs.DirEntry, err error) error {
		if err != nil || !d.IsDir() {
			return err
		}
		if fileExists(filepath.Join(p, "HEAD")) && fileExists(filepath.Join(p, "objects")) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestTenantCannotReadAnotherAppsClone: team B's App is cloned into
// syncd's cache; team A's GitSource naming that clone with a file URL
// (or as a path) is refused at admission, so team A's App never applies
// team B's objects; and the clone's path names neither team B's
// namespace nor its App.
func TestTenantCannotReadAnotherAppsClone(t *testing.T) {
	r := newRig(t, "1h")
	r.app("b", "web", "")
	r.waitReady("b", r.sha)
	found := clones(t, r.c.opts.Runner.CacheDir)
	if len(found) == 0 {
		t.Fatalf("no clone of App %s/b below %s", r.ns, r.c.opts.Runner.CacheDir)
	}
	for _, p := range found {
		rel, _ := filepath.Rel(r.c.opts.Runner.CacheDir, p)
		if strings.Contains(rel, r.ns) || strings.Contains(rel, "/b/") {
			t.Errorf("App %s/b's clone is at %s: a path another App can name (its namespace and name)", r.ns, rel)
		}
	}

	teamA := env.Namespace(t)
	for _, url := range []string{"file://" + found[0], "FILE://" + found[0], found[0]} {
		u := object(t, fmt.Sprintf(`
kind: GitSource
metadata: {name: steal}
spec: {url: %q, branch: main, interval: 1h}`, url))
		u.SetAPIVersion(v1alpha1.GroupVersion.String())
		_, err := r.dyn.Resource(v1alpha1.GitSourceResource).Namespace(teamA).Create(context.Background(), u, metav1.CreateOptions{})
		if err == nil {
			r.stealWith(teamA)
			t.Fatalf("GitSource %s/steal with url %s was admitted", teamA, url)
		}
		if !apierrors.IsInvalid(err) || !strings.Contains(err.Error(), "spec.url") || !strings.Contains(err.Error(), "reads syncd's own disk") {
			t.Errorf("GitSource with url %s: %v; want a refusal of spec.url saying it reads syncd's own disk", url, err)
		}
	}
}

// stealWith runs an App of teamA on its GitSource steal and reports
// whether team B's ConfigMap reached team A's namespace (the hole this
// file's tests close).
func (r *rig) stealWith(teamA string) {
	u := object(r.t, `
kind: App
metadata: {name: a}
spec: {sourceRef: {kind: GitSource, name: steal}, path: web}`)
	u.SetAPIVersion(v1alpha1.GroupVersion.String())
	if _, err := r.dyn.Resource(v1alpha1.AppResource).Namespace(teamA).Create(context.Background(), u, metav1.CreateOptions{}); err != nil {
		r.t.Fatal(err)
	}
	deadline := time.Now().Add(20 * time.Second)
	for time.Now().Before(deadline) {
		if _, err := env.Clientset(r.t).CoreV1().ConfigMaps(teamA).Get(context.Background(), "web", metav1.GetOptions{}); err == nil {
			r.t.Errorf("team B's ConfigMap web was applied into team A's namespace %s through the clone", teamA)
			return
		}
		time.Sleep(200 * time.Millisecond)
	}
}

// TestControllerRefusesLocalSource: a GitSource whose URL reads the local
// disk (admitted before the CRD had its rules, or with them edited out)
// is refused by the controller too, naming the source and spec.url,
// without repeating the URL; so is a HelmSource's or an OCISource's URL
// of another scheme than the network ones.
func TestControllerRefusesLocalSource(t *testing.T) {
	meta := metav1.ObjectMeta{Namespace: "team-a", Name: "steal"}
	git := func(url string) Source {
		return Source{Git: &v1alpha1.GitSource{ObjectMeta: meta, Spec: v1alpha1.GitSourceSpec{URL: url}}}
	}
	helm := func(url string) Source {
		return Source{Helm: &v1alpha1.HelmSource{ObjectMeta: meta, Spec: v1alpha1.HelmSourceSpec{URL: url}}}
	}
	oci := func(url string) Source {
		return Source{OCI: &v1alpha1.OCISource{ObjectMeta: meta, Spec: v1alpha1.OCISourceSpec{URL: url}}}
	}
	tests := map[string]struct {
		src Source
		url string
	}{
		"file URL":            {git(""), "file:///var/cache/syncd/.app-objects/apps/team-b/web/repo/repo"},
		"upper case":          {git(""), "FILE:///srv/git/app.git"},
		"file: no slash":      {git(""), "file:/srv/git/app.git"},
		"absolute path":       {git(""), "/srv/git/app.git"},
		"relative path":       {git(""), "../team-b/repo"},
		"HelmSource file URL": {helm(""), "file:///var/cache/syncd/apps"},
		"HelmSource path":     {helm(""), "/srv/charts"},
		"HelmSource no host":  {helm(""), "https:/srv/charts"},
		"OCISource file URL":  {oci(""), "file:///var/cache/syncd"},
		"OCISource https":     {oci(""), "https://registry.example.com/org/bundle"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			src := withURL(tc.src, tc.url)
			err := checkNetworkSource(src)
			if err == nil {
				t.Fatalf("%s with url %s passed", src.Kind(), tc.url)
			}
			prefix := src.Kind() + " team-a/steal: spec.url: "
			if msg := err.Error(); !strings.HasPrefix(msg, prefix) || strings.Contains(msg, tc.url) {
				t.Errorf("error = %q; want one starting %q, without the URL", msg, prefix)
			}
		})
	}
	for _, ok := range []Source{git("https://example.com/org/repo.git"), helm("https://charts.example.com/stable"), helm("oci://registry.example.com/charts"), oci("oci://registry.example.com/org/bundle")} {
		if err := checkNetworkSource(ok); err != nil {
			t.Errorf("%s refused: %v", ok.Kind(), err)
		}
	}
}

// withURL is src with its spec.url set to url.
func withURL(src Source, url string) Source {
	switch {
	case src.Helm != nil:
		src.Helm.Spec.URL = url
	case src.OCI != nil:
		src.OCI.Spec.URL = url
	default:
		src.Git.Spec.URL = url
	}
	return src
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}
