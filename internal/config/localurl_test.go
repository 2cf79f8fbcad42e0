package config

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestIsLocalGitURL: every form go-git opens on the local disk is local,
// whatever its case or spelling; network URLs are not.
func TestIsLocalGitURL(t *testing.T) {
	tests := map[string]bool{
		"file:///srv/git/app.git":               true,
		"FILE:///srv/git/app.git":               true,
		"File://localhost/srv/git/app.git":      true,
		"file:/srv/git/app.git":                 true,
		"file:srv/git/app.git":                  true,
		" file:///srv/git/app.git":              true,
		"/var/cache/syncd/apps/team/web/repo":   true,
		"./repo":                                true,
		"../team-b/repo":                        true,
		"repo":                                  true,
		"/with:colon/repo":                      true,
		"https://github.com/org/repo.git":       false,
		"http://127.0.0.1:8080/org/repo.git":    false,
		"ssh://git@github.com/org/repo.git":     false,
		"git@github.com:org/repo.git":           false,
		"github.com:org/repo.git":               false,
		"git://example.com/org/repo.git":        false,
		"https://example.com/file:/x/repo.git":  false,
		"ssh://git@example.com/srv/file/r.git":  false,
		"git@example.com:/srv/git/app.git":      false,
		"https://example.com/org/repo.git?file": false,
	}
	for url, want := range tests {
		if got := IsLocalGitURL(url); got != want {
			t.Errorf("IsLocalGitURL(%q) = %t, want %t", url, got, want)
		}
	}
}

// TestCheckLocalSources: a config file's file URL inside the cache
// directory (spelt through .., a symbolic link or a directory not yet
// made) is refused naming the field; one outside it, and network URLs,
// pass.
func TestCheckLocalSources(t *testing.T) {
	root := t.TempDir()
	cache := filepath.Join(root, "cache")
	if err := os.MkdirAll(filepath.Join(cache, "apps"), 0o755); err != nil {
		t.Fatal(err)
	}
	link := filepath.Join(root, "link")
	if err := os.Symlink(cache, link); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		url  string
		want string // fragment of the error; "" for none
	}{
		"outside":          {url: "file://" + filepath.Join(root, "repos", "app.git")},
		"network":          {url: "https://example.com/org/repo.git"},
		"the cache itself": {url: "file://" + cache, want: "sources[0].git.url: the file URL points inside syncd's cache directory"},
		"a clone":          {url: "file://" + filepath.Join(cache, ".app-objects", "apps", "team-b", "web", "repo", "repo"), want: "inside syncd's cache directory"},
		"through ..":       {url: "file://" + filepath.Join(root, "repos") + "/../cache/web/repo", want: "inside syncd's cache directory"},
		"through a link":   {url: "file://" + filepath.Join(link, "apps"), want: "inside syncd's cache directory"},
		"upper case":       {url: "FILE://" + filepath.Join(cache, "web"), want: "inside syncd's cache directory"},
		"a sibling":        {url: "file://" + cache + "-other/repo"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := &Config{File: "syncd.yaml", Sources: []Source{{Name: "repo", Git: GitSource{URL: tc.url}}}}
			err := cfg.CheckLocalSources(cache)
			got := ""
			if err != nil {
				got = err.Error()
			}
			if tc.want == "" {
				if diff := cmp.Diff("", got); diff != "" {
					t.Errorf("CheckLocalSources (-want +got):\n%s", diff)
				}
				return
			}
			if !strings.Contains(got, tc.want) || !strings.HasPrefix(got, "syncd.yaml: ") {
				t.Errorf("CheckLocalSources = %q, want an error of syncd.yaml containing %q", got, tc.want)
			}
		})
	}
}
