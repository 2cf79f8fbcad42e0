package source

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"sync"
)

// Hold pins the tree of rev, a revision this Source handed out, so that it
// stays on disk until release is called, however many newer revisions
// replace it in the meantime. Call it before reading rev.Dir and release
// when done reading (release may be called more than once). A tree that is
// neither in force nor held is deleted, so without a hold a newer poll may
// remove the files a reader is walking and the reader sees a subset of them
// with no error.
//
// Hold fails (an *Error of KindCache) when the tree is already gone: rev is
// no longer in force and nobody held it. Polls of one source hand out the
// revision in force, so a hold taken before the next poll of the source
// always succeeds.
func (s *Source) Hold(rev Revision) (release func(), err error) {
	key, ok := s.treeKey(rev.Dir)
	if !ok {
		return nil, s.newError(KindCache, "hold tree", fmt.Errorf("revision %s has no tree of this source", shortSHA(rev.SHA)), "")
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if (s.pins[key] == 0 && !s.currentLocked(key)) || !isDir(rev.Dir) {
		return nil, s.newError(KindCache, "hold tree", fmt.Errorf("the tree of revision %s was deleted: a newer revision is in force", shortSHA(rev.SHA)),
			"use the revision in force (Last)")
	}
	s.pinLocked(key)
	var once sync.Once
	return func() { once.Do(func() { s.unpin(key) }) }, nil
}

// treeKey returns the name of dir under the trees directory; false when
// dir is not one of this source's trees.
func (s *Source) treeKey(dir string) (string, bool) {
	if dir == "" || filepath.Dir(dir) != s.treesDir() {
		return "", false
	}
	return filepath.Base(dir), true
}

// unpin drops one hold on key and deletes the tree when that was the last
// hold and the tree is not in force.
func (s *Source) unpin(key string) {
	s.mu.Lock()
	s.pins[key]--
	var doomed string
	if s.pins[key] <= 0 {
		delete(s.pins, key)
		if !s.currentLocked(key) {
			doomed = s.retireLocked(key)
		}
	}
	s.mu.Unlock()
	removeRetired(doomed)
}

// retireLocked renames the tree key out of the way (an atomic step, so a
// trees/<sha> directory is always complete: a poll checking the same commit
// out again never finds a half-deleted one) and returns the new path for
// removeRetired; "" when the rename failed (the next poll's sweep retries).
func (s *Source) retireLocked(key string) string {
	s.retired++
	to := filepath.Join(s.treesDir(), ".old-"+key+"-"+strconv.FormatUint(s.retired, 10))
	if err := os.Rename(filepath.Join(s.treesDir(), key), to); err != nil {
		return ""
	}
	return to
}

// removeRetired deletes a retired tree (outside the lock: a big tree takes
// a while). Failures only cost space; the next sweep tries again.
func removeRetired(dirs ...string) {
	for _, d := range dirs {
		if d != "" {
			_ = os.RemoveAll(d)
		}
	}
}

// sweepTrees retires every tree that is neither in force nor held, and
// deletes leftovers (temporary and retired directories). Only a poll calls
// it, with pollMu held, so no checkout is writing a temporary directory.
func (s *Source) sweepTrees() {
	s.sweep(s.treesDir(), func(name string) string {
		if isTreeName(name) {
			return s.retireLocked(name)
		}
		return filepath.Join(s.treesDir(), name)
	})
}

// putInForce makes rev, a poll's new revision, the one in force, then
// drops the hold checkout took for the poll and deletes the trees nobody
// holds any more.
func (s *Source) putInForce(rev Revision) {
	key, _ := s.treeKey(rev.Dir)
	s.setLast(rev)
	s.unpin(key)
	s.sweepTrees()
}

// isTreeName reports whether a trees/ entry is a checked-out tree (named by
// its commit SHA, or an OCI artifact's manifest digest in hex) rather than
// a temporary or retired directory.
func isTreeName(name string) bool {
	return fullSHARE.MatchString(name) || digestHexRE.MatchString(name)
}

var digestHexRE = regexp.MustCompile(`^[0-9a-f]{64}$`)
