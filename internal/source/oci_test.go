package source

import (
	"archive/tar"
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// startRegistry runs an in-memory registry for one test.
func startRegistry(t *testing.T) *ociregistry.Registry {
	t.Helper()
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	return reg
}

// ociSpec is an OCI source of repo on reg following tag (or the fields
// set by edit).
func ociSpec(reg *ociregistry.Registry, repo string, edit func(*Spec)) Spec {
	s := Spec{Name: "art", URL: reg.URL(repo), Interval: time.Minute, OCI: &OCI{}}
	if edit != nil {
		edit(&s)
	}
	return s
}

func mustPush(t *testing.T, reg *ociregistry.Registry, repo, tag string, files map[string]string) string {
	t.Helper()
	d, err := reg.PushFiles(repo, tag, files)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

// TestOCITagPoll: the first poll downloads and extracts the artifact; a
// tag that did not move costs exactly one request (a manifest HEAD) and
// no download; a re-pushed tag is picked up and the old tree deleted.
func TestOCITagPoll(t *testing.T) {
	reg := startRegistry(t)
	v1files := map[string]string{"deploy/cm.yaml": "kind: ConfigMap\n", "kustomization.yaml": "resources: [deploy/cm.yaml]\n"}
	d1 := mustPush(t, reg, "team/manifests", "prod", v1files)
	s := newSource(t, ociSpec(reg, "team/manifests", func(s *Spec) { s.Tag = "prod" }))

	rev, res, err := s.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Moved != Updated || rev.SHA != d1 || rev.Tag != "prod" || rev.Ref != "tag prod" || rev.URL != reg.URL("team/manifests") {
		t.Errorf("first poll: moved %s, revision %+v; want Updated at %s", res.Moved, rev, d1)
	}
	if diff := cmp.Diff(v1files, readTree(t, rev.Dir)); diff != "" {
		t.Errorf("extracted tree (-want +got):\n%s", diff)
	}
	if !strings.Contains(rev.Subject, "https://example.com/manifests.git") {
		t.Errorf("Subject = %q, want the artifact's source annotation", rev.Subject)
	}

	before := len(reg.Log())
	again, res, err := s.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Moved != Unchanged || again.Dir != rev.Dir {
		t.Errorf("second poll: moved %s dir %s, want Unchanged in %s", res.Moved, again.Dir, rev.Dir)
	}
	if diff := cmp.Diff([]string{"HEAD /v2/team/manifests/manifests/prod"}, reg.Log()[before:]); diff != "" {
		t.Errorf("requests of a poll whose tag did not move (-want +got):\n%s", diff)
	}

	d2 := mustPush(t, reg, "team/manifests", "prod", map[string]string{"kustomization.yaml": "resources: []\n"})
	next, res, err := s.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if res.Moved != Updated || next.SHA != d2 || res.Previous != d1 {
		t.Errorf("after a re-push: moved %s sha %s previous %s; want Updated to %s from %s", res.Moved, next.SHA, res.Previous, d2, d1)
	}
	if _, err := os.Stat(rev.Dir); !os.IsNotExist(err) {
		t.Errorf("the old tree %s is still there (stat: %v)", rev.Dir, err)
	}
	if a, err := s.Descends(context.Background(), d2, d1); a != AncestryDescends || err != nil {
		t.Errorf("Descends(new, old) = %s, %v; want descends (artifacts have no history)", a, err)
	}
}

// TestOCISemverAndDigest: a semver range follows the highest matching tag
// (Helm's '_' for '+' read back), picks up a newer one, and a digest pin
// asks the registry nothing once in force.
func TestOCISemverAndDigest(t *testing.T) {
	reg := startRegistry(t)
	for _, tag := range []string{"1.0.0", "1.2.0", "2.0.0", "latest"} {
		mustPush(t, reg, "app", tag, map[string]string{"v.yaml": tag})
	}
	s := newSource(t, ociSpec(reg, "app", func(s *Spec) { s.Semver = "^1.0.0" }))
	rev, _, err := s.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if rev.Tag != "1.2.0" || readTree(t, rev.Dir)["v.yaml"] != "1.2.0" {
		t.Errorf("semver ^1.0.0 resolved to %q, want 1.2.0", rev.Tag)
	}
	mustPush(t, reg, "app", "1.3.0_build.1", map[string]string{"v.yaml": "1.3.0"})
	rev, res, err := s.Poll(context.Background())
	if err != nil || res.Moved != Updated || rev.Tag != "1.3.0_build.1" {
		t.Errorf("after pushing 1.3.0+build.1: tag %q moved %s err %v", rev.Tag, res.Moved, err)
	}

	pinned := mustPush(t, reg, "app", "pinned", map[string]string{"v.yaml": "pinned"})
	p := newSource(t, ociSpec(reg, "app", func(s *Spec) { s.Name = "pin"; s.OCI.Digest = pinned }))
	rev, _, err = p.Poll(context.Background())
	if err != nil || rev.SHA != pinned || rev.Ref != "digest "+pinned {
		t.Fatalf("digest pin: %+v, %v", rev, err)
	}
	before := reg.Requests()
	if _, _, err := p.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	if n := reg.Requests() - before; n != 0 {
		t.Errorf("a digest pin in force cost %d requests, want 0", n)
	}
}

// TestOCIHelmChart: a chart pushed as helm push does is extracted with
// its chart directory stripped, so Chart.yaml is at the tree's root.
func TestOCIHelmChart(t *testing.T) {
	reg := startRegistry(t)
	if _, err := reg.PushChart("charts/shop", "shop", "0.1.0", map[string]string{"Chart.yaml": "name: shop\n", "templates/cm.yaml": "kind: ConfigMap\n"}); err != nil {
		t.Fatal(err)
	}
	s := newSource(t, ociSpec(reg, "charts/shop", func(s *Spec) { s.Semver = "0.1.x" }))
	rev, _, err := s.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	want := map[string]string{"Chart.yaml": "name: shop\n", "templates/cm.yaml": "kind: ConfigMap\n"}
	if diff := cmp.Diff(want, readTree(t, rev.Dir)); diff != "" {
		t.Errorf("chart tree (-want +got):\n%s", diff)
	}
}

// TestOCIAuth: basic credentials from a password file and from a Docker
// config file are sent; wrong ones fail with KindAuth and no secret in the
// message, and the revision in force stays.
func TestOCIAuth(t *testing.T) {
	const secret = "s3cr3t-registry-pw"
	reg := startRegistry(t)
	reg.RequireBasic("robot", secret)
	mustPush(t, reg, "app", "v1", map[string]string{"a.yaml": "a"})
	dir := t.TempDir()
	write := func(name, content string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	dockerCfg := func(pw string) string {
		return `{"auths":{"https://` + reg.Host + `/v1/":{"auth":"` + base64.StdEncoding.EncodeToString([]byte("robot:"+pw)) + `"}}}`
	}
	tests := map[string]struct {
		auth     *OCIAuth
		wantKind Kind
		wantMsg  string
	}{
		"password file":        {auth: &OCIAuth{Username: "robot", PasswordFile: write("pw", secret+"\n")}},
		"docker config":        {auth: &OCIAuth{DockerConfigFile: write("config.json", dockerCfg(secret))}},
		"no credentials":       {wantKind: KindAuth},
		"wrong password":       {auth: &OCIAuth{Username: "robot", PasswordFile: write("bad", "wrong-"+secret)}, wantKind: KindAuth},
		"wrong docker config":  {auth: &OCIAuth{DockerConfigFile: write("bad.json", dockerCfg("wrong-"+secret))}, wantKind: KindAuth},
		"docker config, other": {auth: &OCIAuth{DockerConfigFile: write("other.json", `{"auths":{"ghcr.io":{"auth":"eDp5"}},"credsStore":"desktop"}`)}, wantKind: KindAuth, wantMsg: "has no credentials for " + reg.Host + " (entries: ghcr.io; credential helpers"},
		"missing file":         {auth: &OCIAuth{TokenFile: filepath.Join(dir, "nope")}, wantKind: KindAuth, wantMsg: "oci.auth.tokenFile"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			s := newSource(t, ociSpec(reg, "app", func(s *Spec) { s.Tag = "v1"; s.OCI.Auth = tc.auth }))
			rev, _, err := s.Poll(context.Background())
			if tc.wantKind == "" {
				if err != nil || readTree(t, rev.Dir)["a.yaml"] != "a" {
					t.Fatalf("poll: %v", err)
				}
				return
			}
			t.Logf("poll error: %v", err)
			var se *Error
			if !errors.As(err, &se) || se.Kind != tc.wantKind {
				t.Fatalf("poll error = %v, want an *Error of kind %s", err, tc.wantKind)
			}
			if !strings.Contains(err.Error(), tc.wantMsg) {
				t.Errorf("error %q does not say %q", err, tc.wantMsg)
			}
			if strings.Contains(err.Error(), secret) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte("robot:wrong-"+secret))) {
				t.Errorf("error shows a credential: %v", err)
			}
			if _, ok := s.Last(); ok {
				t.Error("a failed poll put a revision in force")
			}
		})
	}
}

// TestOCIRefused: bad input is a clear *Error, and nothing is put in
// force (an earlier revision stays).
func TestOCIRefused(t *testing.T) {
	reg := startRegistry(t)
	good := mustPush(t, reg, "app", "v1", map[string]string{"a.yaml": "a"})
	push := func(tag string, entries ...ociregistry.Entry) {
		if _, err := reg.Push("app", tag, ociregistry.FluxConfig, ociregistry.FluxContent, entries); err != nil {
			t.Fatal(err)
		}
	}
	push("dotdot", ociregistry.Entry{Header: tar.Header{Name: "../evil.yaml", Typeflag: tar.TypeReg, Mode: 0o644}, Body: "x"})
	push("symlink", ociregistry.Entry{Header: tar.Header{Name: "etc", Typeflag: tar.TypeSymlink, Linkname: "../../../../etc"}})
	push("device", ociregistry.Entry{Header: tar.Header{Name: "null", Typeflag: tar.TypeChar, Mode: 0o666}})
	if _, err := reg.Push("app", "image", "application/vnd.oci.image.config.v1+json", "application/vnd.oci.image.layer.v1.tar+zstd", ociregistry.Files(map[string]string{"a": "b"})); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		tag      string
		wantKind Kind
		want     string
	}{
		"missing tag": {tag: "nope", wantKind: KindRefNotFound, want: `tag "nope" does not exist`},
		"dotdot":      {tag: "dotdot", wantKind: KindArtifactRefused, want: `entry "../evil.yaml": is not a relative path inside the artifact`},
		"symlink out": {tag: "symlink", wantKind: KindArtifactRefused, want: `entry "etc": is a symlink to "../../../../etc", outside the artifact`},
		"device":      {tag: "device", wantKind: KindArtifactRefused, want: `entry "null": is a character device`},
		"no tar+gzip": {tag: "image", wantKind: KindArtifactRefused, want: "has no tar+gzip content layer (layers: application/vnd.oci.image.layer.v1.tar+zstd)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tag := "v1"
			s := newSource(t, ociSpec(reg, "app", func(s *Spec) { s.Tag = tag }))
			if _, _, err := s.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
			s.spec.Tag, s.refName = tc.tag, tc.tag
			_, _, err := s.Poll(context.Background())
			t.Logf("poll error: %v", err)
			var se *Error
			if !errors.As(err, &se) || se.Kind != tc.wantKind || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("poll error = %v; want kind %s saying %q", err, tc.wantKind, tc.want)
			}
			if last, ok := s.Last(); !ok || last.SHA != good || !isDir(last.Dir) {
				t.Errorf("the revision in force is %+v, want %s kept with its tree", last, good)
			}
			if _, err := os.Stat(filepath.Join(s.treesDir(), "..", "evil.yaml")); !os.IsNotExist(err) {
				t.Errorf("an entry was written outside the tree (stat: %v)", err)
			}
			entries, _ := os.ReadDir(s.treesDir())
			if len(entries) != 1 {
				t.Errorf("trees/ holds %d entries after the refusal, want only the tree in force", len(entries))
			}
		})
	}
}

// TestOCISpecRefused: New names the bad field.
func TestOCISpecRefused(t *testing.T) {
	tests := map[string]struct {
		edit func(*Spec)
		want string
	}{
		"bad semver":  {func(s *Spec) { s.Semver = "not a range" }, `sources[art].oci.semver: "not a range" is not a semver range`},
		"no ref":      {func(s *Spec) {}, "sources[art].oci.tag|semver|digest: set exactly one"},
		"two refs":    {func(s *Spec) { s.Tag = "v1"; s.Semver = "^1" }, "set exactly one"},
		"bad digest":  {func(s *Spec) { s.OCI.Digest = "sha256:abc" }, "sources[art].oci.digest"},
		"tag in URL":  {func(s *Spec) { s.URL += ":v1"; s.Tag = "v1" }, "sources[art].oci.url: must name a repository and no tag"},
		"https URL":   {func(s *Spec) { s.URL = "https://ghcr.io/org/app"; s.Tag = "v1" }, "sources[art].oci.url: must be oci://"},
		"two auths":   {func(s *Spec) { s.Tag = "v1"; s.OCI.Auth = &OCIAuth{TokenFile: "/t", DockerConfigFile: "/d"} }, "sources[art].oci.auth: set exactly one"},
		"no interval": {func(s *Spec) { s.Tag = "v1"; s.Interval = 0 }, "sources[art].oci.interval|schedule"},
		"user, no pw": {func(s *Spec) { s.Tag = "v1"; s.OCI.Auth = &OCIAuth{Username: "u", TokenFile: "/t"} }, "sources[art].oci.auth.username"},
	}
	reg := &ociregistry.Registry{Host: "127.0.0.1:5000"}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := New(ociSpec(reg, "app", tc.edit), Options{CacheDir: t.TempDir()})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("New error = %v, want it to say %q", err, tc.want)
			}
		})
	}
}

// BenchmarkOCIPollUnchanged measures a poll whose tag did not move (one
// HEAD request to a loopback registry).
func BenchmarkOCIPollUnchanged(b *testing.B) {
	reg := ociregistry.Start()
	b.Cleanup(reg.Close)
	if _, err := reg.PushFiles("app", "prod", map[string]string{"a.yaml": "a"}); err != nil {
		b.Fatal(err)
	}
	s := newSource(b, ociSpec(reg, "app", func(s *Spec) { s.Tag = "prod" }))
	if _, _, err := s.Poll(context.Background()); err != nil {
		b.Fatal(err)
	}
	before := reg.Requests()
	b.ResetTimer()
	for b.Loop() {
		if _, res, err := s.Poll(context.Background()); err != nil || res.Moved != Unchanged {
			b.Fatalf("poll: %v %v", res.Moved, err)
		}
	}
	b.ReportMetric(float64(reg.Requests()-before)/float64(b.N), "requests/op")
}

// TestOCICAFile: a registry served with a private CA is trusted with
// oci.caFile and not without it.
func TestOCICAFile(t *testing.T) {
	reg := ociregistry.StartTLS()
	t.Cleanup(reg.Close)
	mustPush(t, reg, "app", "v1", map[string]string{"a.yaml": "a"})
	ca := filepath.Join(t.TempDir(), "ca.pem")
	if err := os.WriteFile(ca, reg.CAPEM, 0o600); err != nil {
		t.Fatal(err)
	}
	s := newSource(t, ociSpec(reg, "app", func(s *Spec) { s.Tag = "v1"; s.OCI.CAFile = ca }))
	if rev, _, err := s.Poll(context.Background()); err != nil || readTree(t, rev.Dir)["a.yaml"] != "a" {
		t.Fatalf("poll with caFile: %v", err)
	}
	s = newSource(t, ociSpec(reg, "app", func(s *Spec) { s.Name = "noca"; s.Tag = "v1" }))
	if _, _, err := s.Poll(context.Background()); err == nil {
		t.Error("poll of a registry with a private CA succeeded without caFile")
	}
}
