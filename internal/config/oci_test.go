package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

const ociHeader = `apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: art
    oci:
`

func TestOCISection(t *testing.T) {
	dir := t.TempDir()
	file := filepath.Join(dir, "syncd.yaml")
	yaml := ociHeader + `      url: oci://ghcr.io/org/manifests
      semver: ">=1.2.0 <2.0.0"
      interval: 5m
      caFile: ca.pem
      auth: {dockerConfigFile: secrets/docker.json}
apps:
  - name: web
    source: art
    path: deploy
`
	if err := os.WriteFile(file, []byte(yaml), 0o600); err != nil {
		t.Fatal(err)
	}
	c, err := Load(file)
	if err != nil {
		t.Fatal(err)
	}
	s := c.Sources[0]
	got := []any{s.Kind(), s.URL(), s.OCI.Semver, s.OCI.Interval.Duration.String(), s.OCI.CAFile, s.OCI.Auth.DockerConfigFile}
	want := []any{SourceOCI, "oci://ghcr.io/org/manifests", ">=1.2.0 <2.0.0", "5m0s", filepath.Join(dir, "ca.pem"), filepath.Join(dir, "secrets", "docker.json")}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("oci source (-want +got):\n%s", diff)
	}
}

func TestOCISectionRejects(t *testing.T) {
	const digest = "sha256:0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef"
	tests := map[string]struct {
		oci  string
		want []string
	}{
		"no version":      {`{url: oci://ghcr.io/org/app, interval: 1m}`, []string{"sources[0].oci", "set one of tag, semver or digest"}},
		"two versions":    {`{url: oci://ghcr.io/org/app, tag: v1, digest: ` + digest + `, interval: 1m}`, []string{"sources[0].oci.digest", "tag and digest are both set"}},
		"bad semver":      {`{url: oci://ghcr.io/org/app, semver: "1.x.y.z", interval: 1m}`, []string{"sources[0].oci.semver", "not a semver constraint"}},
		"bad tag":         {`{url: oci://ghcr.io/org/app, tag: "-v1", interval: 1m}`, []string{"sources[0].oci.tag", "not an OCI tag"}},
		"bad digest":      {`{url: oci://ghcr.io/org/app, digest: sha256:abc, interval: 1m}`, []string{"sources[0].oci.digest", "64 lower-case hex"}},
		"https url":       {`{url: https://ghcr.io/org/app, tag: v1, interval: 1m}`, []string{"sources[0].oci.url", "scheme must be oci"}},
		"tag in url":      {`{url: "oci://ghcr.io/org/app:v1", tag: v1, interval: 1m}`, []string{"sources[0].oci.url", "names a tag or digest"}},
		"credentials url": {`{url: "oci://u:p@ghcr.io/org/app", tag: v1, interval: 1m}`, []string{"sources[0].oci.url", "embeds credentials"}},
		"upper-case repo": {`{url: oci://ghcr.io/Org/App, tag: v1, interval: 1m}`, []string{"sources[0].oci.url", "not a valid OCI repository name"}},
		"no interval":     {`{url: oci://ghcr.io/org/app, tag: v1}`, []string{"sources[0].oci.interval", "required"}},
		"two auths":       {`{url: oci://ghcr.io/org/app, tag: v1, interval: 1m, auth: {tokenFile: t, dockerConfigFile: d}}`, []string{"sources[0].oci.auth.tokenFile", "keep one kind"}},
		"user alone":      {`{url: oci://ghcr.io/org/app, tag: v1, interval: 1m, auth: {username: u, tokenFile: t}}`, []string{"sources[0].oci.auth.username", "go together"}},
		"empty auth":      {`{url: oci://ghcr.io/org/app, tag: v1, interval: 1m, auth: {}}`, []string{"sources[0].oci.auth", "sets no credentials"}},
		"insecure creds":  {`{url: oci://registry.internal/app, tag: v1, interval: 1m, insecure: true, auth: {tokenFile: t}}`, []string{"sources[0].oci.auth", "sent unencrypted"}},
		"unknown field":   {`{url: oci://ghcr.io/org/app, tag: v1, interval: 1m, branch: main}`, []string{"sources[0].oci", "branch"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := Parse([]byte(strings.TrimSuffix(ociHeader, "\n")+" "+tc.oci+"\n"), "syncd.yaml")
			if err == nil {
				t.Fatal("Parse succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not mention %q:\n%v", w, err)
				}
			}
		})
	}
	t.Run("git beside oci", func(t *testing.T) {
		_, err := Parse([]byte(ociHeader+"      {url: oci://ghcr.io/org/app, tag: v1, interval: 1m}\n    git: {url: https://git.example.com/r.git, branch: main, interval: 1m}\n"), "syncd.yaml")
		if err == nil || !strings.Contains(err.Error(), "sources[0].git") || !strings.Contains(err.Error(), "git and oci are both set") {
			t.Errorf("Parse error = %v, want git and oci both set", err)
		}
	})
	t.Run("loopback plain http with credentials", func(t *testing.T) {
		_, err := Parse([]byte(ociHeader+"      {url: oci://127.0.0.1:5000/app, tag: v1, interval: 1m, insecure: true, auth: {tokenFile: t}}\n"), "syncd.yaml")
		if err != nil {
			t.Errorf("Parse: %v", err)
		}
	})
}

// TestHelmSourceOCIURL: a Helm repository source may be an oci://
// registry prefix (charts pushed with helm push).
func TestHelmSourceOCIURL(t *testing.T) {
	head := "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n  - name: charts\n    helm: "
	if _, err := Parse([]byte(head+"{url: oci://ghcr.io/example/charts, interval: 10m}\n"), "syncd.yaml"); err != nil {
		t.Errorf("Parse of an oci:// helm source: %v", err)
	}
	_, err := Parse([]byte(head+"{url: \"oci://ghcr.io/example/charts?x=1\", interval: 10m}\n"), "syncd.yaml")
	if err == nil || !strings.Contains(err.Error(), "sources[0].helm.url") {
		t.Errorf("Parse of an oci:// URL with a query: %v, want sources[0].helm.url refused", err)
	}
}
