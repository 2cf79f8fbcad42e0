package config

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
)

// IsLocalGitURL reports whether a Git URL reads syncd's own filesystem
// instead of fetching over the network: a file URL (a "file:" scheme in
// any case, with or without "//"), or anything go-git would open as a
// local path (an absolute or relative path; go-git's
// transport.NewEndpoint is the judge, so what it treats as local is
// local here). An App's GitSource may not use one (it would read
// another tenant's clone, or any repository on syncd's disk); only the
// operator's config file may (CheckLocalSources).
func IsLocalGitURL(raw string) bool {
	raw = strings.TrimSpace(raw)
	if scheme, _, ok := strings.Cut(raw, ":"); ok && strings.EqualFold(scheme, "file") {
		return true
	}
	ep, err := transport.NewEndpoint(raw)
	if err != nil {
		return false // not fetchable at all; validation says why
	}
	return ep.Protocol == "file"
}

// CheckLocalSources refuses the config's Git sources whose file URL
// points inside syncd's cache directory (cacheDir): the clones of the
// other sources and of Apps live there, so such a source would read
// another app's repository, or its own clone. Errors name the field
// (sources[i].git.url) and the directory, never the URL's credentials.
func (c *Config) CheckLocalSources(cacheDir string) error {
	if cacheDir == "" {
		return nil
	}
	cache := realPath(cacheDir)
	var errs Errors
	for i, s := range c.Sources {
		if s.Kind() != SourceGit || !IsLocalGitURL(s.Git.URL) {
			continue
		}
		if p := localPath(s.Git.URL); p != "" && within(realPath(p), cache) {
			errs = append(errs, FieldError{File: c.File, Field: fmt.Sprintf("sources[%d].git.url", i),
				Message: fmt.Sprintf("the file URL points inside syncd's cache directory %s, where syncd keeps its own clones (other apps' among them); point it at a repository outside it", cacheDir)})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	// Wrapped: callers compare errors with == (an Errors is a slice,
	// which == cannot compare); errors.As still finds it.
	return fmt.Errorf("%w", errs)
}

// localPath is the directory a local Git URL opens ("" when it has none).
func localPath(raw string) string {
	raw = strings.TrimSpace(raw)
	if u, err := url.Parse(raw); err == nil && strings.EqualFold(u.Scheme, "file") {
		return u.Path
	}
	if ep, err := transport.NewEndpoint(raw); err == nil && ep.Protocol == "file" {
		return ep.Path
	}
	return ""
}

// realPath is p absolute and cleaned, with symbolic links resolved as
// far as p exists.
func realPath(p string) string {
	abs, err := filepath.Abs(p)
	if err != nil {
		return filepath.Clean(p)
	}
	rest := ""
	for dir := abs; ; dir = filepath.Dir(dir) {
		if resolved, err := filepath.EvalSymlinks(dir); err == nil {
			return filepath.Join(resolved, rest)
		} else if !errors.Is(err, os.ErrNotExist) || dir == filepath.Dir(dir) {
			return abs
		}
		rest = filepath.Join(filepath.Base(dir), rest)
	}
}

// within reports whether path is dir or below it.
func within(path, dir string) bool {
	rel, err := filepath.Rel(dir, path)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator))
}
