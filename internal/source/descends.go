package source

import (
	"context"
	"fmt"
	"math"

	"github.com/go-git/go-git/v5/plumbing"
)

// Ancestry is what Descends found out about an older revision.
type Ancestry string

const (
	// AncestryDescends: the older revision is in the newer one's history.
	AncestryDescends Ancestry = "descends"
	// AncestryDiverged: the newer revision's whole history was read and
	// the older revision is not in it (a force-push, a rollback).
	AncestryDiverged Ancestry = "diverged"
	// AncestryUnknown: the history could not be read far enough to tell
	// (the server did not send it, or the source is not a branch).
	AncestryUnknown Ancestry = "unknown"
)

// Descends reports whether the commit oldSHA is in the history of newSHA,
// as the cache holds it. A shallow cache (every source clones with depth
// 1, and again after a rewrite) ends the walk early: the branch is then
// deepened to its whole history once (one fetch; later walks reuse it)
// and walked again. It takes the poll lock, so it never runs while the
// cache is being updated.
func (s *Source) Descends(ctx context.Context, newSHA, oldSHA string) (Ancestry, error) {
	if newSHA == oldSHA {
		return AncestryDescends, nil
	}
	if s.oci != nil {
		return ociDescends(ctx, newSHA, oldSHA)
	}
	if !fullSHARE.MatchString(newSHA) || !fullSHARE.MatchString(oldSHA) {
		return AncestryUnknown, fmt.Errorf("source %s: ancestry of %q and %q: not full commit SHAs", s.name, newSHA, oldSHA)
	}
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	repo, closeRepo, corrupt, err := s.openRepo(false)
	if err != nil {
		return AncestryUnknown, err
	}
	if corrupt != nil {
		return AncestryUnknown, s.newError(KindCorruptCache, "read cache", corrupt, "the next poll clones it again")
	}
	defer closeRepo()
	newH, oldH := plumbing.NewHash(newSHA), plumbing.NewHash(oldSHA)
	a := ancestryOf(repo, newH, oldH)
	if a != unknown || s.kind != refBranch {
		return exported(a), nil
	}
	creds, err := s.readCredentials()
	if err != nil {
		return AncestryUnknown, err
	}
	// Deepen as git fetch --unshallow does: a depth the server takes as
	// "all of it".
	tgt := target{ref: plumbing.NewBranchReferenceName(s.refName)}
	if ferr := s.fetch(ctx, repo, creds, tgt, math.MaxInt32); ferr != nil {
		removeTempPacks(s.repoDir())
		return AncestryUnknown, s.transportError("deepen", ferr, creds)
	}
	return exported(ancestryOf(repo, newH, oldH)), nil
}

func exported(a ancestry) Ancestry {
	switch a {
	case descends:
		return AncestryDescends
	case diverged:
		return AncestryDiverged
	}
	return AncestryUnknown
}
