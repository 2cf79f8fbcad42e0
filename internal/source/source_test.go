package source

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
)

func TestNewValidates(t *testing.T) {
	base := func() config.GitSource {
		return config.GitSource{URL: "https://example.com/org/repo.git", Branch: "main", Interval: minute()}
	}
	tests := map[string]struct {
		name    string
		mut     func(g *config.GitSource)
		wantErr string // substring; "" means valid
	}{
		"valid branch": {mut: func(g *config.GitSource) {}},
		"valid cron":   {mut: func(g *config.GitSource) { g.Interval = nil; g.Schedule = "*/5 * * * *" }},
		"valid @every": {mut: func(g *config.GitSource) { g.Interval = nil; g.Schedule = "@every 90s" }},
		"valid scp ssh": {mut: func(g *config.GitSource) {
			g.URL = "git@github.com:org/repo.git"
			g.Auth = &config.GitAuth{SSHKeyFile: "k", KnownHostsFile: "kh"}
		}},
		"valid semver": {mut: func(g *config.GitSource) { g.Branch = ""; g.Semver = ">=1.2.0 <2.0.0" }},
		"valid tag verify": {mut: func(g *config.GitSource) {
			g.Branch = ""
			g.Tag = "v1"
			g.Verify = &config.GitVerify{Mode: "tag", KeysFile: "k"}
		}},
		"bad name":             {name: "Bad/Name", wantErr: "source name"},
		"no url":               {mut: func(g *config.GitSource) { g.URL = "" }, wantErr: "sources[src].git.url"},
		"password in url":      {mut: func(g *config.GitSource) { g.URL = "https://u:hunter2@example.com/r.git" }, wantErr: "tokenFile"},
		"bad scheme":           {mut: func(g *config.GitSource) { g.URL = "ftp://example.com/r.git" }, wantErr: "git.url"},
		"two refs":             {mut: func(g *config.GitSource) { g.Tag = "v1" }, wantErr: "exactly one of branch, tag, semver and commit"},
		"no ref":               {mut: func(g *config.GitSource) { g.Branch = "" }, wantErr: "exactly one of branch"},
		"refs/ prefix":         {mut: func(g *config.GitSource) { g.Branch = "refs/heads/main" }, wantErr: "git.branch"},
		"bad semver":           {mut: func(g *config.GitSource) { g.Branch = ""; g.Semver = "banana" }, wantErr: "git.semver"},
		"short commit":         {mut: func(g *config.GitSource) { g.Branch = ""; g.Commit = "abc123" }, wantErr: "git.commit"},
		"no schedule":          {mut: func(g *config.GitSource) { g.Interval = nil }, wantErr: "interval|schedule"},
		"both schedules":       {mut: func(g *config.GitSource) { g.Schedule = "@hourly" }, wantErr: "interval|schedule"},
		"zero interval":        {mut: func(g *config.GitSource) { g.Interval = &metav1.Duration{} }, wantErr: "git.interval"},
		"bad cron":             {mut: func(g *config.GitSource) { g.Interval = nil; g.Schedule = "every tuesday" }, wantErr: "git.schedule"},
		"token on ssh":         {mut: func(g *config.GitSource) { g.URL = "ssh://git@h/r"; g.Auth = &config.GitAuth{TokenFile: "t"} }, wantErr: "auth.tokenFile"},
		"ssh without key":      {mut: func(g *config.GitSource) { g.URL = "ssh://git@h/r" }, wantErr: "auth.sshKeyFile"},
		"ssh without known":    {mut: func(g *config.GitSource) { g.URL = "ssh://git@h/r"; g.Auth = &config.GitAuth{SSHKeyFile: "k"} }, wantErr: "auth.knownHostsFile"},
		"verify bad mode":      {mut: func(g *config.GitSource) { g.Verify = &config.GitVerify{Mode: "all", KeysFile: "k"} }, wantErr: "verify.mode"},
		"verify tag on branch": {mut: func(g *config.GitSource) { g.Verify = &config.GitVerify{Mode: "tag", KeysFile: "k"} }, wantErr: "verify.mode"},
		"verify without keys":  {mut: func(g *config.GitSource) { g.Verify = &config.GitVerify{Mode: "head"} }, wantErr: "verify.keysFile"},
		"rewrites on a tag": {mut: func(g *config.GitSource) {
			g.Branch = ""
			g.Tag = "v1"
			g.Verify = &config.GitVerify{Mode: "tag", KeysFile: "k", AllowRewrites: true}
		}, wantErr: "verify.allowRewrites"},
		"valid rewrites on a branch": {mut: func(g *config.GitSource) {
			g.Verify = &config.GitVerify{Mode: "head", KeysFile: "k", AllowRewrites: true}
		}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := base()
			if tc.mut != nil {
				tc.mut(&g)
			}
			srcName := "src"
			if tc.name != "" {
				srcName = tc.name
			}
			_, err := New(config.Source{Name: srcName, Git: g}, Options{CacheDir: t.TempDir()})
			switch {
			case tc.wantErr == "" && err != nil:
				t.Errorf("New: %v", err)
			case tc.wantErr != "" && (err == nil || !strings.Contains(err.Error(), tc.wantErr)):
				t.Errorf("New error = %v, want one containing %q", err, tc.wantErr)
			case err != nil && strings.Contains(err.Error(), "hunter2"):
				t.Errorf("error %q shows the password", err)
			}
		})
	}
}

func TestDisplayURLStripsUserinfo(t *testing.T) {
	tests := map[string]string{
		"https://bot@example.com/r.git":  "https://example.com/r.git",
		"ssh://git@example.com:2222/r":   "ssh://example.com:2222/r",
		"git@github.com:org/r.git":       "github.com:org/r.git",
		"http://127.0.0.1:8080/repo.git": "http://127.0.0.1:8080/repo.git",
	}
	for in, want := range tests {
		got, _, err := displayURL(in)
		if err != nil || got != want {
			t.Errorf("displayURL(%q) = %q, %v; want %q", in, got, err, want)
		}
	}
}
