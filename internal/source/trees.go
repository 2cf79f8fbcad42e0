package source

import (
	"os"
	"path/filepath"
	"strings"
	"sync"
	"sync/atomic"
)

// treeState is what a Git, OCI or Helm repository source knows of its
// checked-out trees (trees/<name>, one a revision): the revision in force
// and the holds on each tree. A tree that is neither in force nor held is
// deleted.
type treeState struct {
	mu sync.Mutex
	// last is the revision in force, nil before the first successful
	// poll. It is set with mu held (so a sweep under mu sees it) and read
	// without it: error hints are made where mu may be held
	// (inForceHint).
	last atomic.Pointer[Revision]
	// pins counts the holds on each tree (by directory name, see Hold).
	pins map[string]int
}

// Last returns the revision in force: the last one a poll resolved,
// fetched, verified and checked out. ok is false before the first
// successful poll.
func (t *treeState) Last() (Revision, bool) {
	last := t.last.Load()
	if last == nil {
		return Revision{}, false
	}
	return *last, true
}

// previousInForce starts the hint of a failed poll that keeps the
// revision in force; noneInForce replaces it while there is none (the
// process's first poll has not succeeded): no tree of the source is
// rendered, so nothing is applied or pruned from it.
const (
	previousInForce = "the previous revision stays in force"
	noneInForce     = "no revision of this source is in force yet, so nothing is applied or pruned from it (what the cluster has stays as it is)"
)

// inForceHint is hint as it reads now: previousInForce says noneInForce
// while no revision is in force.
func (t *treeState) inForceHint(hint string) string {
	rest, ok := strings.CutPrefix(hint, previousInForce)
	if !ok {
		return hint
	}
	if t.last.Load() != nil {
		return hint
	}
	return noneInForce + rest
}

// setLast puts rev in force.
func (t *treeState) setLast(rev Revision) {
	t.mu.Lock()
	defer t.mu.Unlock()
	t.last.Store(&rev)
}

// currentLocked reports whether key is the tree of the revision in force.
func (t *treeState) currentLocked(key string) bool {
	last := t.last.Load()
	return last != nil && filepath.Base(last.Dir) == key
}

func (t *treeState) pinLocked(key string) {
	if t.pins == nil {
		t.pins = map[string]int{}
	}
	t.pins[key]++
}

// sweep deletes what doom makes of each entry of dir, the trees
// directory, that is neither in force nor held: the path to delete, ""
// for none. doom runs with mu held, the deleting after it (a big tree
// takes a while). Only a poll sweeps, with its pollMu held.
func (t *treeState) sweep(dir string, doom func(name string) string) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return
	}
	var doomed []string
	t.mu.Lock()
	for _, e := range entries {
		if name := e.Name(); t.pins[name] <= 0 && !t.currentLocked(name) {
			doomed = append(doomed, doom(name))
		}
	}
	t.mu.Unlock()
	removeRetired(doomed...)
}
