package source

import (
	"fmt"

	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
)

// ancestry is what a walk of the cached history from a new head found out
// about an older head.
type ancestry int

const (
	// descends: the old head is in the new head's history.
	descends ancestry = iota
	// diverged: the new head's whole history is in the cache and the old
	// head is not in it.
	diverged
	// unknown: the old head was not met, but the walk ended at commits the
	// cache lacks (a shallow boundary, or history the server assumed the
	// cache had).
	unknown
)

// guardsAncestry reports whether a new head of this source must descend
// from the last verified head: a branch source with verification on and
// no git.verify.allowRewrites. Tags and semver ranges are bound by the
// signed tag's name instead (see verify).
func (s *Source) guardsAncestry() bool {
	v := s.spec.Verify
	return s.kind == refBranch && v != nil && !v.AllowRewrites
}

// cloneDepth is the depth of a fetch into an empty cache: one commit, or
// whole history when the new head will have to be shown to descend from
// the previous one (a depth-1 clone can never show that).
func (s *Source) cloneDepth(hasPrev bool) int {
	if s.guardsAncestry() && hasPrev {
		return 0
	}
	return 1
}

// ancestryOf walks the cached history from newH, breadth first, looking
// for oldH. A commit the cache cannot read ends its branch of the walk and
// makes a miss unknown rather than diverged. A match proves descent
// whatever the cache holds: commits are addressed by their content.
func ancestryOf(repo *git.Repository, newH, oldH plumbing.Hash) ancestry {
	seen := map[plumbing.Hash]bool{newH: true}
	queue := []plumbing.Hash{newH}
	complete := true
	for len(queue) > 0 {
		h := queue[0]
		queue = queue[1:]
		if h == oldH {
			return descends
		}
		c, err := repo.CommitObject(h)
		if err != nil {
			complete = false
			continue
		}
		for _, p := range c.ParentHashes {
			if !seen[p] {
				seen[p] = true
				queue = append(queue, p)
			}
		}
	}
	if complete {
		return diverged
	}
	return unknown
}

// reaches reports whether oldH is in newH's cached history.
func reaches(repo *git.Repository, newH, oldH plumbing.Hash) bool {
	return ancestryOf(repo, newH, oldH) == descends
}

// rewriteRefused is the error for a branch head that does not descend
// from the last verified head.
func (s *Source) rewriteRefused(newH plumbing.Hash, prev string, a ancestry) *Error {
	err := fmt.Errorf("branch %s moved to %s, which does not descend from the last verified head %s (a force-push, or a rewind to an older signed commit)", s.refName, newH, prev)
	if a == unknown {
		err = fmt.Errorf("branch %s moved to %s, and its fetched history is incomplete: it cannot be shown to descend from the last verified head %s", s.refName, newH, prev)
	}
	return s.newError(KindVerification, "verify", err,
		fmt.Sprintf("the previous revision %s stays in force; push commits on top of it (revert instead of force-pushing), or set git.verify.allowRewrites: true on source %s if history rewrites are intended", prev, s.name))
}
