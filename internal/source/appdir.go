package source

import (
	"errors"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"strings"
)

// AppDir returns the directory of an app's path inside the revision's tree.
// The path is relative to the repository root ("" or "." is the root); it
// must not contain "..", must exist at the revision as a directory, and
// neither it nor any symlink under it may resolve outside the tree. Errors
// are *PathError naming the app and path.
func (r Revision) AppDir(appName, appPath string) (string, error) {
	fail := func(reason string, err error) (string, error) {
		return "", &PathError{App: appName, Path: appPath, Source: r.Source, SHA: r.SHA, Reason: reason, Err: err}
	}
	if r.Dir == "" {
		return fail("the source has no checked-out revision", nil)
	}
	p := filepath.ToSlash(appPath)
	if path.IsAbs(p) || filepath.IsAbs(appPath) {
		return fail("must be relative to the repository root", nil)
	}
	for _, part := range strings.Split(p, "/") {
		if part == ".." {
			return fail(`must not contain ".."`, nil)
		}
		if strings.EqualFold(part, ".git") {
			return fail(`must not name .git`, nil)
		}
	}
	root, err := filepath.EvalSymlinks(r.Dir)
	if err != nil {
		return fail("the revision's directory is gone", err)
	}
	full := filepath.Join(root, filepath.FromSlash(path.Clean("/"+p)))
	resolved, err := filepath.EvalSymlinks(full)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fail("does not exist at this revision; fix the app's path or push it", nil)
		}
		return fail("cannot be resolved", err)
	}
	if !within(root, resolved) {
		return fail("is a symlink that leaves the repository", nil)
	}
	fi, err := os.Stat(resolved)
	if err != nil {
		return fail("cannot be read", err)
	}
	if !fi.IsDir() {
		return fail("is not a directory", nil)
	}
	// Every symlink under the app directory must stay in the tree, or a
	// manifest could be read from anywhere on the host.
	werr := filepath.WalkDir(resolved, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.Type()&fs.ModeSymlink == 0 {
			return nil
		}
		t, err := filepath.EvalSymlinks(p)
		if err != nil {
			// A dangling link cannot leak anything; the planner reports it
			// if it reads it.
			if errors.Is(err, fs.ErrNotExist) {
				return nil
			}
			return err
		}
		if !within(root, t) {
			rel, _ := filepath.Rel(root, p)
			return &escapeError{rel: filepath.ToSlash(rel)}
		}
		return nil
	})
	var esc *escapeError
	if errors.As(werr, &esc) {
		return fail("contains symlink "+esc.rel+" that leaves the repository", nil)
	}
	if werr != nil {
		return fail("cannot be read", werr)
	}
	return resolved, nil
}

type escapeError struct{ rel string }

func (e *escapeError) Error() string { return "symlink " + e.rel + " leaves the repository" }

// within reports whether p is root or below it (both already resolved).
func within(root, p string) bool {
	if p == root {
		return true
	}
	rel, err := filepath.Rel(root, p)
	return err == nil && rel != ".." && !strings.HasPrefix(rel, ".."+string(filepath.Separator)) && !filepath.IsAbs(rel)
}
