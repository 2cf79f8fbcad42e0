package source

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path"
	"path/filepath"
	"strings"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/filemode"
	"github.com/go-git/go-git/v5/plumbing/object"
)

// checkout writes the tree of commit h to trees/<sha> (through a temporary
// directory renamed into place, so a trees/<sha> directory is always
// complete) and returns its path. A tree directory that already exists
// (still held by a reader, or left by an earlier process) is reused. Files
// that are the same in prev (the previous revision's tree, checked out in
// prevDir) are hard-linked from there instead of written. On success the
// returned tree carries one hold for the poll (see Hold), so a reader
// releasing it cannot delete it before the poll puts it in force; Poll
// drops that hold.
func (s *Source) checkout(repo *git.Repository, h plumbing.Hash, tree, prev *object.Tree, prevDir string) (dir string, corrupt, err error) {
	dir = filepath.Join(s.treesDir(), h.String())
	if s.holdIfPresent(h.String()) {
		return dir, nil, nil
	}
	tmp, err := os.MkdirTemp(s.treesDir(), ".tmp-"+h.String()+"-")
	if err != nil {
		return "", nil, s.newError(KindCache, "checkout", err, "check that "+s.treesDir()+" is writable")
	}
	w := treeWriter{repo: repo, root: tmp, prevRoot: prevDir, seen: map[string]bool{}}
	if werr := w.write(tree, prev, ""); werr != nil {
		_ = os.RemoveAll(tmp)
		var we *writeError
		if errors.As(werr, &we) {
			return "", nil, s.newError(KindCache, "checkout", we.err, "check free space and permissions under "+s.treesDir())
		}
		var be *badTreeError
		if errors.As(werr, &be) {
			return "", nil, s.newError(KindRefNotFound, "checkout", werr, "the commit's tree is malformed; fix the repository")
		}
		return "", fmt.Errorf("checkout %s: %w", h, werr), nil
	}
	if err := os.Chmod(tmp, 0o755); err != nil {
		_ = os.RemoveAll(tmp)
		return "", nil, s.newError(KindCache, "checkout", err, "")
	}
	s.mu.Lock()
	err = os.Rename(tmp, dir)
	if err == nil {
		s.pinLocked(h.String())
	}
	s.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(tmp)
		return "", nil, s.newError(KindCache, "checkout", err, "")
	}
	return dir, nil, nil
}

// holdIfPresent takes the poll's hold on trees/key when that directory
// exists. Trees are retired (renamed away) under s.mu, so the check and the
// hold are one step: the tree cannot vanish between them.
func (s *Source) holdIfPresent(key string) bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !isDir(filepath.Join(s.treesDir(), key)) {
		return false
	}
	s.pinLocked(key)
	return true
}

// writeError marks a local filesystem failure (not cache corruption).
type writeError struct{ err error }

func (e *writeError) Error() string { return e.err.Error() }
func (e *writeError) Unwrap() error { return e.err }

// badTreeError marks a tree that cannot be written safely (duplicate or
// dangerous names).
type badTreeError struct{ msg string }

func (e *badTreeError) Error() string { return e.msg }

type treeWriter struct {
	repo     *git.Repository
	root     string
	prevRoot string
	seen     map[string]bool
}

// write writes tree's entries under rel; prev is the previous revision's
// tree at the same path, or nil. Object read errors are returned as they
// are (the caller treats them as corruption).
func (w *treeWriter) write(tree, prev *object.Tree, rel string) error {
	var prevEntries map[string]object.TreeEntry
	if prev != nil {
		prevEntries = make(map[string]object.TreeEntry, len(prev.Entries))
		for _, pe := range prev.Entries {
			prevEntries[pe.Name] = pe
		}
	}
	for _, e := range tree.Entries {
		pe, inPrev := prevEntries[e.Name]
		if e.Name == "" || e.Name == "." || e.Name == ".." || strings.ContainsAny(e.Name, "/\\\x00") || strings.EqualFold(e.Name, ".git") {
			return &badTreeError{fmt.Sprintf("tree entry %q in %q has a name that cannot be checked out", e.Name, rel)}
		}
		p := path.Join(rel, e.Name)
		if w.seen[p] {
			return &badTreeError{fmt.Sprintf("tree has two entries for %q", p)}
		}
		w.seen[p] = true
		full := filepath.Join(w.root, filepath.FromSlash(p))
		switch e.Mode {
		case filemode.Dir:
			sub, err := w.repo.TreeObject(e.Hash)
			if err != nil {
				return fmt.Errorf("read tree %s (%s): %w", e.Hash, p, err)
			}
			if err := os.Mkdir(full, 0o755); err != nil {
				return &writeError{err}
			}
			var prevSub *object.Tree
			if inPrev && pe.Mode == filemode.Dir {
				prevSub, _ = w.repo.TreeObject(pe.Hash)
			}
			if err := w.write(sub, prevSub, p); err != nil {
				return err
			}
		case filemode.Regular, filemode.Deprecated, filemode.Executable:
			perm := os.FileMode(0o644)
			if e.Mode == filemode.Executable {
				perm = 0o755
			}
			if inPrev && pe.Hash == e.Hash && pe.Mode == e.Mode &&
				os.Link(filepath.Join(w.prevRoot, filepath.FromSlash(p)), full) == nil {
				continue
			}
			if err := w.writeBlob(e.Hash, p, full, perm); err != nil {
				return err
			}
		case filemode.Symlink:
			target, err := w.readBlob(e.Hash, p)
			if err != nil {
				return err
			}
			if err := os.Symlink(string(target), full); err != nil {
				return &writeError{err}
			}
		case filemode.Submodule:
			// Submodules are not fetched; leave an empty directory so the
			// path exists.
			if err := os.Mkdir(full, 0o755); err != nil {
				return &writeError{err}
			}
		default:
			return &badTreeError{fmt.Sprintf("tree entry %q has unknown mode %o", p, uint32(e.Mode))}
		}
	}
	return nil
}

func (w *treeWriter) readBlob(h plumbing.Hash, p string) ([]byte, error) {
	b, err := w.repo.BlobObject(h)
	if err != nil {
		return nil, fmt.Errorf("read blob %s (%s): %w", h, p, err)
	}
	r, err := b.Reader()
	if err != nil {
		return nil, fmt.Errorf("read blob %s (%s): %w", h, p, err)
	}
	defer r.Close()
	data, err := io.ReadAll(r)
	if err != nil {
		return nil, fmt.Errorf("read blob %s (%s): %w", h, p, err)
	}
	return data, nil
}

func (w *treeWriter) writeBlob(h plumbing.Hash, p, full string, perm os.FileMode) error {
	b, err := w.repo.BlobObject(h)
	if err != nil {
		return fmt.Errorf("read blob %s (%s): %w", h, p, err)
	}
	r, err := b.Reader()
	if err != nil {
		return fmt.Errorf("read blob %s (%s): %w", h, p, err)
	}
	defer r.Close()
	f, err := os.OpenFile(full, os.O_WRONLY|os.O_CREATE|os.O_EXCL, perm)
	if err != nil {
		return &writeError{err}
	}
	_, cerr := io.Copy(f, r)
	if err := f.Close(); err != nil && cerr == nil {
		return &writeError{err}
	}
	if cerr != nil {
		var pe *os.PathError
		if errors.As(cerr, &pe) {
			return &writeError{cerr}
		}
		return fmt.Errorf("read blob %s (%s): %w", h, p, cerr)
	}
	return nil
}
