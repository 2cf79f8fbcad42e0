package source

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestOCIHelmRepo: a Helm repository source at an oci:// URL resolves
// each chart's version range against the chart's tags, extracts the chart
// below <root>/<chart>, costs a tag listing and a HEAD per chart while
// nothing moved (no download), and picks up a newer version in range.
func TestOCIHelmRepo(t *testing.T) {
	reg := startRegistry(t)
	chart := func(version, greeting string) {
		t.Helper()
		files := map[string]string{"Chart.yaml": "apiVersion: v2\nname: shop\nversion: " + version + "\n", "values.yaml": "greeting: " + greeting + "\n"}
		if _, err := reg.PushChart("charts/shop", "shop", version, files); err != nil {
			t.Fatal(err)
		}
	}
	chart("0.1.0", "hello")
	chart("1.0.0", "too new")
	chart("0.3.0-rc.1", "prerelease")
	ref := ChartRef{Chart: "shop", Version: "0.x"}
	r, _ := newTestHelmRepo(t, HelmSpec{Name: "charts", URL: "oci://" + reg.Host + "/charts", Interval: time.Minute, Charts: []ChartRef{ref}})

	rev, res, err := r.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cr, ok := rev.Chart(ref)
	if !ok || res.Moved != Updated || cr.Version != "0.1.0" {
		t.Fatalf("first poll: moved %s chart %+v (ok %v), want 0.1.0", res.Moved, cr, ok)
	}
	if b, err := os.ReadFile(filepath.Join(cr.ChartDir, "values.yaml")); err != nil || string(b) != "greeting: hello\n" || filepath.Base(cr.ChartDir) != "shop" {
		t.Errorf("chart dir %s: values.yaml %q (%v)", cr.ChartDir, b, err)
	}

	before := len(reg.Log())
	again, res, err := r.Poll(context.Background())
	if err != nil || res.Moved != Unchanged || again.SHA != rev.SHA {
		t.Fatalf("second poll: moved %s err %v", res.Moved, err)
	}
	want := []string{"GET /v2/charts/shop/tags/list", "HEAD /v2/charts/shop/manifests/0.1.0"}
	if diff := cmp.Diff(want, reg.Log()[before:]); diff != "" {
		t.Errorf("requests of a poll where nothing moved (-want +got):\n%s", diff)
	}

	chart("0.2.0+build.7", "bonjour")
	next, res, err := r.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if cr, _ := next.Chart(ref); res.Moved != Updated || cr.Version != "0.2.0+build.7" {
		t.Errorf("after pushing 0.2.0+build.7: moved %s version %q", res.Moved, cr.Version)
	}
}

// TestOCIHelmRepoErrors: a chart the registry does not have and a range
// no tag matches fail naming the chart; nothing is put in force.
func TestOCIHelmRepoErrors(t *testing.T) {
	reg := startRegistry(t)
	if _, err := reg.PushChart("charts/shop", "shop", "0.1.0", map[string]string{"Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n"}); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		ref  ChartRef
		want string
	}{
		"missing chart": {ChartRef{Chart: "nope"}, "chart nope: oci://" + reg.Host + "/charts/nope does not exist"},
		"no match":      {ChartRef{Chart: "shop", Version: ">=2.0.0"}, `chart shop: none of its 1 tags is a version matching ">=2.0.0"`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestHelmRepo(t, HelmSpec{Name: "charts", URL: "oci://" + reg.Host + "/charts", Interval: time.Minute, Charts: []ChartRef{tc.ref}})
			_, _, err := r.Poll(context.Background())
			var se *Error
			if !errors.As(err, &se) || se.Kind != KindRefNotFound || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("poll error = %v, want RefNotFound saying %q", err, tc.want)
			}
			if _, ok := r.Last(); ok {
				t.Error("a failed poll put a revision in force")
			}
		})
	}
}

// TestOCIHelmRepoAuth: a Helm repository at an oci:// URL authenticates
// as an OCI source does (registryAuth): basic credentials from a password
// file or from a Docker config file pull the chart; wrong ones fail with
// KindAuth naming the source and the registry, with no secret in the
// message, and put nothing in force.
func TestOCIHelmRepoAuth(t *testing.T) {
	const secret = "s3cr3t-chart-registry-pw"
	reg := startRegistry(t)
	reg.RequireBasic("robot", secret)
	if _, err := reg.PushChart("charts/shop", "shop", "0.1.0", map[string]string{"Chart.yaml": "apiVersion: v2\nname: shop\nversion: 0.1.0\n"}); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	write := func(name, content string) string { return writeFile(t, filepath.Join(dir, name), content) }
	basic := func(pw string) string { return base64.StdEncoding.EncodeToString([]byte("robot:" + pw)) }
	dockerCfg := func(pw string) string { return `{"auths":{"` + reg.Host + `":{"auth":"` + basic(pw) + `"}}}` }
	tests := map[string]struct {
		auth    *HelmAuth
		wantErr []string
	}{
		"password file":       {auth: &HelmAuth{Username: "robot", PasswordFile: write("pw", secret+"\n")}},
		"docker config":       {auth: &HelmAuth{DockerConfigFile: write("config.json", dockerCfg(secret))}},
		"no credentials":      {wantErr: []string{"authentication required"}},
		"wrong password":      {auth: &HelmAuth{Username: "robot", PasswordFile: write("bad", "wrong-"+secret)}, wantErr: []string{"check the configured credentials"}},
		"wrong docker config": {auth: &HelmAuth{DockerConfigFile: write("bad.json", dockerCfg("wrong-"+secret))}, wantErr: []string{"check the configured credentials"}},
		"no entry":            {auth: &HelmAuth{DockerConfigFile: write("other.json", `{"auths":{"ghcr.io":{"auth":"eDp5"}}}`)}, wantErr: []string{"helm.auth.dockerConfigFile", "has no credentials for " + reg.Host + " (entries: ghcr.io)"}},
		"missing file":        {auth: &HelmAuth{DockerConfigFile: filepath.Join(dir, "nope.json")}, wantErr: []string{"helm.auth.dockerConfigFile", "nope.json"}},
	}
	ref := ChartRef{Chart: "shop"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestHelmRepo(t, HelmSpec{URL: "oci://" + reg.Host + "/charts", Auth: tc.auth, Charts: []ChartRef{ref}})
			rev, _, err := r.Poll(context.Background())
			if tc.wantErr == nil {
				if cr, ok := rev.Chart(ref); err != nil || !ok || cr.Version != "0.1.0" {
					t.Fatalf("poll: chart %+v (ok %v), error %v; want shop 0.1.0", cr, ok, err)
				}
				return
			}
			t.Logf("poll error: %v", err)
			var se *Error
			if !errors.As(err, &se) || se.Kind != KindAuth {
				t.Fatalf("poll error = %v, want an *Error of kind %s", err, KindAuth)
			}
			for _, want := range append([]string{`source "charts"`, "oci://" + reg.Host + "/charts"}, tc.wantErr...) {
				if !strings.Contains(err.Error(), want) {
					t.Errorf("error does not say %q", want)
				}
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), basic("wrong-"+secret)) {
				t.Errorf("error shows a credential: %v", err)
			}
			if _, ok := r.Last(); ok {
				t.Error("a failed poll put a revision in force")
			}
		})
	}
}

// TestHelmRepoAuthRefused: a Docker config file is refused for an
// https:// repository, and beside another kind of credentials.
func TestHelmRepoAuthRefused(t *testing.T) {
	tests := map[string]struct {
		url  string
		auth HelmAuth
		want string
	}{
		"https":       {"https://charts.example.com", HelmAuth{DockerConfigFile: "/d.json"}, "sources[charts].helm.auth: dockerConfigFile is read only for a repository at an oci:// URL"},
		"two kinds":   {"oci://ghcr.io/org/charts", HelmAuth{DockerConfigFile: "/d.json", BearerTokenFile: "/t"}, "sources[charts].helm.auth: set one of passwordFile, bearerTokenFile and dockerConfigFile"},
		"basic+token": {"https://charts.example.com", HelmAuth{Username: "u", PasswordFile: "/p", BearerTokenFile: "/t"}, "set one of"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rs, err := NewHelmRepos(Options{CacheDir: t.TempDir()})
			if err != nil {
				t.Fatal(err)
			}
			_, err = rs.Add(HelmSpec{Name: "charts", URL: tc.url, Interval: time.Minute, Auth: &tc.auth})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("Add error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}
