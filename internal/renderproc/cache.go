package renderproc

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"time"

	"syncd.dev/syncd/internal/planner"
)

// cacheEntries and cacheBytes bound what a Renderer's cache keeps: at
// most that many answers, of at most that many bytes in all; the least
// recently used go first. (A daemon keeps one answer an app, or two
// while an app moves to a new tree; an answer of 200 objects is about
// 50 KB, one of 10,000 about 2.5 MB.)
const (
	cacheEntries = 1024
	cacheBytes   = 256 << 20
)

// staleCopy is how old a copy of an answer still being read can be: one
// older was left by a syncd that died while it rendered.
const staleCopy = time.Hour

// answerCache keeps the answers of successful renders of trees whose
// content is known (planner.Tree.Content), one file each, so that a tree
// rendered before is not rendered again: an empty commit, a tag moved,
// or the next run of a one-shot syncd apply on an unchanged repository.
// A render is kept only when the tree alone decides it: no Helm chart
// (its values and capabilities come from outside the tree), no
// decryption (the answer would hold plaintext); and it is looked up by a
// key of everything else that decides it (see key). A kept answer is read
// back under the same output limit and with the same decoder as a
// child's.
type answerCache struct {
	dir string
	// binary identifies the syncd binary that rendered (its path, size
	// and modification time): another build may render otherwise.
	binary string
	// entries and bytes bound what is kept (cacheEntries, cacheBytes).
	entries int
	bytes   int64
}

// newAnswerCache returns the cache in dir of the binary exe; nil when
// exe cannot be read (nothing is then kept).
func newAnswerCache(dir, exe string) *answerCache {
	st, err := os.Stat(exe)
	if err != nil {
		return nil
	}
	return &answerCache{dir: dir, binary: fmt.Sprintf("%s %d %d", exe, st.Size(), st.ModTime().UnixNano()), entries: cacheEntries, bytes: cacheBytes}
}

// key is the name of t's answer rendered under l, or "" when t's answer
// is not kept (cacheable).
func (c *answerCache) key(t planner.Tree, l Limits) string {
	if c == nil || !cacheable(t) {
		return ""
	}
	rel, err := filepath.Rel(t.Root, t.Dir)
	if err != nil {
		return ""
	}
	h := sha256.New()
	fmt.Fprintf(h, "syncd render answer 1\n%s\n%s\n%s\n%d %d %d\n", c.binary, t.Content, filepath.ToSlash(rel), l.Memory, l.Time, l.Output)
	return hex.EncodeToString(h.Sum(nil))
}

// cacheable reports whether t's render is decided by its content alone
// (see answerCache).
func cacheable(t planner.Tree) bool {
	return t.Content != "" && t.Root != "" && t.Decryption == nil && reflect.ValueOf(t.Helm).IsZero()
}

// path is the file of the answer named key.
func (c *answerCache) path(key string) string { return filepath.Join(c.dir, key) }

// read returns the manifests of the answer named key; ok is false when
// there is none or it cannot be read whole (it is then removed, and the
// tree rendered again).
func (c *answerCache) read(key string, max int64) (ms []planner.Manifest, ok bool) {
	f, err := os.Open(c.path(key))
	if err != nil {
		return nil, false
	}
	defer f.Close()
	res := readAnswer(f, max)
	if res.err != nil || res.over || res.renderErr != nil {
		_ = os.Remove(c.path(key))
		return nil, false
	}
	now := time.Now()
	_ = os.Chtimes(c.path(key), now, now)
	return res.manifests, true
}

// writer returns where a child's answer for key is copied as it is read,
// and keep, which makes it the answer named key once the render
// succeeded (ok), or drops it. Writing to it never fails: a cache that
// cannot write (a full disk) keeps nothing, and the render goes on.
func (c *answerCache) writer(key string) (w io.Writer, keep func(ok bool)) {
	if err := os.MkdirAll(c.dir, 0o700); err != nil {
		return io.Discard, func(bool) {}
	}
	f, err := os.CreateTemp(c.dir, ".answer-*")
	if err != nil {
		return io.Discard, func(bool) {}
	}
	copied := &copyWriter{f: f}
	return copied, func(ok bool) {
		err := f.Close()
		if !ok || copied.err != nil || err != nil || os.Rename(f.Name(), c.path(key)) != nil {
			_ = os.Remove(f.Name())
			return
		}
		c.trim()
	}
}

// copyWriter writes to f until a write fails, then drops the rest and
// keeps the error; it never returns one, so that a copy that cannot be
// written does not fail what is copied.
type copyWriter struct {
	f   *os.File
	err error
}

func (w *copyWriter) Write(p []byte) (int, error) {
	if w.err == nil {
		_, w.err = w.f.Write(p)
	}
	return len(p), nil
}

// trim removes the least recently used answers beyond c's bounds.
func (c *answerCache) trim() {
	entries, err := os.ReadDir(c.dir)
	if err != nil {
		return
	}
	type kept struct {
		name string
		used time.Time
		size int64
	}
	var all []kept
	for _, e := range entries {
		info, err := e.Info()
		switch {
		case err != nil || !info.Mode().IsRegular():
		case e.Name()[0] != '.':
			all = append(all, kept{e.Name(), info.ModTime(), info.Size()})
		case time.Since(info.ModTime()) > staleCopy:
			// A copy a render that never ended left behind.
			_ = os.Remove(c.path(e.Name()))
		}
	}
	slices.SortFunc(all, func(a, b kept) int { return b.used.Compare(a.used) })
	var total int64
	for i, k := range all {
		total += k.size
		if i >= c.entries || total > c.bytes {
			_ = os.Remove(c.path(k.name))
		}
	}
}
