package planner

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path"
	"path/filepath"
	"sort"
	"strings"
	"sync/atomic"
	"time"

	"sigs.k8s.io/kustomize/kyaml/filesys"
)

// repoRoot is where the repository appears to kustomize. Kustomize sees
// only this virtual absolute path, never the host's, so its error messages
// carry repository-relative paths once the prefix is trimmed.
const repoRoot = "/syncd-repo"

// errReadOnly is returned by every write a build attempts.
var errReadOnly = errors.New("the repository is read-only to a kustomize build")

// errOutside is returned for a path that is not below repoRoot.
var errOutside = errors.New("is outside the repository: everything a kustomization uses must be inside the repository")

// errGitDir is returned for a path through a .git directory or file: a
// local checkout's .git/config may hold credentials (CI checkouts persist
// their token there), and Git's own files are never manifests.
var errGitDir = errors.New("is inside .git, which a kustomize build may not read")

// errBuildTimeout is returned by every file operation after the build's
// deadline, so a build that runs too long stops at its next read.
var errBuildTimeout = fmt.Errorf("the kustomize build did not finish in time (the limit is %s)", KustomizeTimeout)

// repoFS is kustomize's file system for one build: a read-only view of a
// directory tree, confined to it by os.Root (which refuses "..", absolute
// symlinks and symlinks that leave the tree, at the system-call level). It
// presents the tree at repoRoot. Reads are limited to MaxFileSize per file
// and MaxTreeSize in total; after deadline every operation fails.
type repoFS struct {
	root     *os.Root
	deadline atomic.Int64 // time.Time.UnixNano
	read     atomic.Int64 // bytes read so far
	// secrets decrypts SOPS files as ReadFile serves them; nil refuses
	// them.
	secrets *secrets
	// served are files ReadFile serves in place of the repository's, by
	// path below repoRoot: the top kustomization with origin tracking
	// turned on (see kustorigin.go). Set before the build starts.
	served map[string][]byte
}

var _ filesys.FileSystem = (*repoFS)(nil)

func openRepoFS(dir string, deadline time.Time) (*repoFS, error) {
	r, err := os.OpenRoot(dir)
	if err != nil {
		return nil, err
	}
	f := &repoFS{root: r}
	f.setDeadline(deadline)
	return f, nil
}

// setDeadline sets the time from which every operation fails.
func (f *repoFS) setDeadline(t time.Time) { f.deadline.Store(t.UnixNano()) }

// expired reports whether the deadline has passed.
func (f *repoFS) expired() bool { return time.Now().UnixNano() >= f.deadline.Load() }

func (f *repoFS) Close() error { return f.root.Close() }

// rel maps a path kustomize uses to one relative to the root, "." for the
// root itself. Relative paths are taken from repoRoot.
func (f *repoFS) rel(name string) (string, error) {
	if f.expired() {
		return "", errBuildTimeout
	}
	p := filepath.ToSlash(name)
	if !path.IsAbs(p) {
		p = path.Join(repoRoot, p)
	}
	p = path.Clean(p)
	switch {
	case p == repoRoot:
		return ".", nil
	case strings.HasPrefix(p, repoRoot+"/"):
		rel := strings.TrimPrefix(p, repoRoot+"/")
		if inGitDir(rel) {
			return "", &fs.PathError{Op: "open", Path: name, Err: errGitDir}
		}
		return rel, nil
	}
	return "", &fs.PathError{Op: "open", Path: name, Err: errOutside}
}

// inGitDir reports whether a slash-separated relative path passes through
// an entry named .git (in any case: macOS and Windows file systems fold
// it).
func inGitDir(rel string) bool {
	for _, part := range strings.Split(rel, "/") {
		if strings.EqualFold(part, ".git") {
			return true
		}
	}
	return false
}

// fail rewraps an os.Root error with the virtual path, so no host path
// reaches an error message.
func (f *repoFS) fail(op, name string, err error) error {
	var pe *fs.PathError
	if errors.As(err, &pe) {
		err = pe.Err
	}
	if err != nil && strings.Contains(err.Error(), "escapes from parent") {
		err = errors.New("leads out of the repository (through a symlink or ..)")
	}
	return &fs.PathError{Op: op, Path: name, Err: err}
}

// inRoot maps name to its path below the root (rel) and runs op on it; an
// error from op is rewrapped with the virtual path (fail).
func inRoot[T any](f *repoFS, op, name string, do func(rel string) (T, error)) (T, error) {
	var zero T
	rel, err := f.rel(name)
	if err != nil {
		return zero, err
	}
	v, err := do(rel)
	if err != nil {
		return zero, f.fail(op, name, err)
	}
	return v, nil
}

func (f *repoFS) stat(name string) (fs.FileInfo, error) {
	return inRoot(f, "stat", name, f.root.Stat)
}

// Create refuses: the build may not write.
func (f *repoFS) Create(name string) (filesys.File, error) {
	return nil, &fs.PathError{Op: "create", Path: name, Err: errReadOnly}
}

// Mkdir refuses: the build may not write.
func (f *repoFS) Mkdir(name string) error {
	return &fs.PathError{Op: "mkdir", Path: name, Err: errReadOnly}
}

// MkdirAll refuses: the build may not write.
func (f *repoFS) MkdirAll(name string) error {
	return &fs.PathError{Op: "mkdir", Path: name, Err: errReadOnly}
}

// RemoveAll refuses: the build may not write.
func (f *repoFS) RemoveAll(name string) error {
	return &fs.PathError{Op: "remove", Path: name, Err: errReadOnly}
}

// WriteFile refuses: the build may not write.
func (f *repoFS) WriteFile(name string, _ []byte) error {
	return &fs.PathError{Op: "write", Path: name, Err: errReadOnly}
}

// Open opens a file for reading; what is read counts against the limits.
func (f *repoFS) Open(name string) (filesys.File, error) {
	fh, err := inRoot(f, "open", name, f.root.Open)
	if err != nil {
		return nil, err
	}
	return &repoFile{File: fh, fs: f, name: name}, nil
}

// IsDir reports whether name is a directory (following symlinks inside
// the repository).
func (f *repoFS) IsDir(name string) bool {
	info, err := f.stat(name)
	return err == nil && info.IsDir()
}

// Exists reports whether name exists inside the repository.
func (f *repoFS) Exists(name string) bool {
	_, err := f.stat(name)
	return err == nil
}

// ReadDir returns the sorted names of the entries of a directory.
func (f *repoFS) ReadDir(name string) ([]string, error) {
	fh, err := inRoot(f, "open", name, f.root.Open)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	names, err := fh.Readdirnames(-1)
	if err != nil {
		return nil, f.fail("readdir", name, err)
	}
	sort.Strings(names)
	return names, nil
}

// CleanedAbs splits an existing path into its directory and file name (""
// when the path is a directory), like kustomize's on-disk file system.
// Symlinks inside the repository are followed but not resolved in the
// returned path.
func (f *repoFS) CleanedAbs(name string) (filesys.ConfirmedDir, string, error) {
	rel, err := f.rel(name)
	if err != nil {
		return "", "", err
	}
	abs := path.Join(repoRoot, rel)
	info, err := f.stat(abs)
	if err != nil {
		return "", "", err
	}
	if info.IsDir() {
		return filesys.ConfirmedDir(abs), "", nil
	}
	return filesys.ConfirmedDir(path.Dir(abs)), path.Base(abs), nil
}

// Glob returns the paths matching pattern, which must be inside the
// repository.
func (f *repoFS) Glob(pattern string) ([]string, error) {
	matches, err := inRoot(f, "glob", pattern, func(rel string) ([]string, error) {
		return fs.Glob(f.root.FS(), rel)
	})
	if err != nil {
		return nil, err
	}
	out := matches[:0]
	for _, m := range matches {
		if !inGitDir(m) {
			out = append(out, path.Join(repoRoot, m))
		}
	}
	return out, nil
}

// ReadFile reads a whole file, refusing one over MaxFileSize before it is
// read and any read past MaxTreeSize for the build. A file SOPS encrypted
// is served decrypted (secrets.open).
func (f *repoFS) ReadFile(name string) ([]byte, error) {
	if data, ok := f.served[path.Clean(filepath.ToSlash(name))]; ok {
		if f.expired() {
			return nil, errBuildTimeout
		}
		return bytes.Clone(data), nil
	}
	fh, err := f.Open(name)
	if err != nil {
		return nil, err
	}
	defer fh.Close()
	info, err := fh.Stat()
	if err != nil {
		return nil, f.fail("stat", name, err)
	}
	if info.IsDir() {
		return nil, &fs.PathError{Op: "read", Path: name, Err: errors.New("is a directory")}
	}
	if info.Size() > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: name, Err: tooBig(int(info.Size()))}
	}
	data, err := io.ReadAll(io.LimitReader(fh, MaxFileSize+1))
	if err != nil {
		return nil, err
	}
	if len(data) > MaxFileSize {
		return nil, &fs.PathError{Op: "read", Path: name, Err: tooBig(len(data))}
	}
	plain, err := f.secrets.open(name, data)
	if err != nil {
		return nil, &fs.PathError{Op: "read", Path: name, Err: err}
	}
	return plain, nil
}

// Walk walks the tree below name in lexical order, like filepath.Walk.
func (f *repoFS) Walk(name string, walkFn filepath.WalkFunc) error {
	rel, err := f.rel(name)
	if err != nil {
		return err
	}
	return fs.WalkDir(f.root.FS(), rel, func(p string, d fs.DirEntry, err error) error {
		virtual := path.Join(repoRoot, p)
		if inGitDir(p) {
			if d != nil && d.IsDir() {
				return fs.SkipDir
			}
			return nil
		}
		if err != nil {
			return walkFn(virtual, nil, f.fail("walk", virtual, err))
		}
		if f.expired() {
			return errBuildTimeout
		}
		info, err := d.Info()
		if err != nil {
			return walkFn(virtual, nil, f.fail("walk", virtual, err))
		}
		return walkFn(virtual, info, nil)
	})
}

// repoFile is an open file of a repoFS: reads count against MaxTreeSize
// and writes are refused.
type repoFile struct {
	*os.File
	fs   *repoFS
	name string
}

func (r *repoFile) Read(p []byte) (int, error) {
	if r.fs.expired() {
		return 0, errBuildTimeout
	}
	n, err := r.File.Read(p)
	if r.fs.read.Add(int64(n)) > MaxTreeSize {
		return n, &fs.PathError{Op: "read", Path: r.name, Err: fmt.Errorf("the kustomize build read more than the %d MiB limit: move unrelated files out of what the kustomization references", MaxTreeSize>>20)}
	}
	return n, err
}

func (r *repoFile) Write([]byte) (int, error) {
	return 0, &fs.PathError{Op: "write", Path: r.name, Err: errReadOnly}
}
