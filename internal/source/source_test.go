package source

import (
	"strings"
	"testing"
	"time"
)

func TestNewValidates(t *testing.T) {
	base := func() Spec {
		return Spec{URL: "https://example.com/org/repo.git", Branch: "main", Interval: minute()}
	}
	tests := map[string]struct {
		name    string
		mut     func(g *Spec)
		wantErr string // substring; "" means valid
	}{
		"valid branch": {mut: func(g *Spec) {}},
		"valid cron":   {mut: func(g *Spec) { g.Interval = 0; g.Schedule = "*/5 * * * *" }},
		"valid @every": {mut: func(g *Spec) { g.Interval = 0; g.Schedule = "@every 90s" }},
		"valid scp ssh": {mut: func(g *Spec) {
			g.URL = "git@github.com:org/repo.git"
			g.Auth = &Auth{SSHKeyFile: "k", KnownHostsFile: "kh"}
		}},
		"valid semver": {mut: func(g *Spec) { g.Branch = ""; g.Semver = ">=1.2.0 <2.0.0" }},
		"valid tag verify": {mut: func(g *Spec) {
			g.Branch = ""
			g.Tag = "v1"
			g.Verify = &Verify{Mode: "tag", KeysFile: "k"}
		}},
		"bad name":             {name: "Bad/Name", wantErr: "source name"},
		"no url":               {mut: func(g *Spec) { g.URL = "" }, wantErr: "sources[src].git.url"},
		"password in url":      {mut: func(g *Spec) { g.URL = "https://u:hunter2@example.com/r.git" }, wantErr: "tokenFile"},
		"bad scheme":           {mut: func(g *Spec) { g.URL = "ftp://example.com/r.git" }, wantErr: "git.url"},
		"two refs":             {mut: func(g *Spec) { g.Tag = "v1" }, wantErr: "exactly one of branch, tag, semver and commit"},
		"no ref":               {mut: func(g *Spec) { g.Branch = "" }, wantErr: "exactly one of branch"},
		"refs/ prefix":         {mut: func(g *Spec) { g.Branch = "refs/heads/main" }, wantErr: "git.branch"},
		"bad semver":           {mut: func(g *Spec) { g.Branch = ""; g.Semver = "banana" }, wantErr: "git.semver"},
		"short commit":         {mut: func(g *Spec) { g.Branch = ""; g.Commit = "abc123" }, wantErr: "git.commit"},
		"no schedule":          {mut: func(g *Spec) { g.Interval = 0 }, wantErr: "interval|schedule"},
		"both schedules":       {mut: func(g *Spec) { g.Schedule = "@hourly" }, wantErr: "interval|schedule"},
		"negative interval":    {mut: func(g *Spec) { g.Interval = -time.Second }, wantErr: "git.interval: -1s must be positive"},
		"bad cron":             {mut: func(g *Spec) { g.Interval = 0; g.Schedule = "every tuesday" }, wantErr: "git.schedule"},
		"token on ssh":         {mut: func(g *Spec) { g.URL = "ssh://git@h/r"; g.Auth = &Auth{TokenFile: "t"} }, wantErr: "auth.tokenFile"},
		"ssh without key":      {mut: func(g *Spec) { g.URL = "ssh://git@h/r" }, wantErr: "auth.sshKeyFile"},
		"ssh without known":    {mut: func(g *Spec) { g.URL = "ssh://git@h/r"; g.Auth = &Auth{SSHKeyFile: "k"} }, wantErr: "auth.knownHostsFile"},
		"verify bad mode":      {mut: func(g *Spec) { g.Verify = &Verify{Mode: "all", KeysFile: "k"} }, wantErr: "verify.mode"},
		"verify tag on branch": {mut: func(g *Spec) { g.Verify = &Verify{Mode: "tag", KeysFile: "k"} }, wantErr: "verify.mode"},
		"verify without keys":  {mut: func(g *Spec) { g.Verify = &Verify{Mode: "head"} }, wantErr: "verify.keysFile"},
		"rewrites on a tag": {mut: func(g *Spec) {
			g.Branch = ""
			g.Tag = "v1"
			g.Verify = &Verify{Mode: "tag", KeysFile: "k", AllowRewrites: true}
		}, wantErr: "verify.allowRewrites"},
		"valid rewrites on a branch": {mut: func(g *Spec) {
			g.Verify = &Verify{Mode: "head", KeysFile: "k", AllowRewrites: true}
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
			_, err := New(withName(g, srcName), Options{CacheDir: t.TempDir()})
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
