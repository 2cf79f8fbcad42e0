package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"

	"github.com/Masterminds/semver/v3"
	"github.com/go-git/go-billy/v5/osfs"
	git "github.com/go-git/go-git/v5"
	gitconfig "github.com/go-git/go-git/v5/config"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/cache"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/go-git/go-git/v5/storage/filesystem"
	"github.com/go-git/go-git/v5/storage/memory"
)

// target is what the configured ref resolves to on the server.
type target struct {
	commit plumbing.Hash          // the commit (tags peeled)
	ref    plumbing.ReferenceName // remote ref to fetch; empty for a commit that is no tip
	tag    string                 // tag name for tag/semver refs
}

func (s *Source) newError(kind Kind, op string, err error, hint string) *Error {
	return &Error{Source: s.name, Kind: kind, URL: s.displayURL, Ref: s.refString(), Op: op, Hint: s.inForceHint(hint), Err: err}
}

// transportError turns an error from listing or fetching into an *Error.
func (s *Source) transportError(op string, err error, creds credentials) *Error {
	err = scrub(err, creds.secrets...)
	if kind, hint, ok := classify(err); ok {
		return s.newError(kind, op, err, hint)
	}
	return s.newError(KindFetch, op, err, "")
}

// Poll lists the remote's refs and resolves the configured ref (the
// first poll of a branch or a tag fetches it by name instead: pollTarget).
// If it still names the revision in force, Poll returns that revision with
// Unchanged after exactly one ref listing. Otherwise it fetches only the
// objects it lacks (depth 1 where the ref allows), verifies signatures when
// configured, checks the tree out under the cache directory and makes the
// new revision the one in force.
//
// On error the revision in force (see Last) and its directory are kept,
// and the error is an *Error whose Kind says why. ctx bounds the network
// calls: give it a deadline (the Scheduler does).
func (s *Source) Poll(ctx context.Context) (Revision, Result, error) {
	s.pollMu.Lock()
	defer s.pollMu.Unlock()
	st, done, err := s.beginPoll(ctx)
	if done {
		return st.prev, st.res, err
	}
	if s.oci != nil {
		return s.pollOCI(ctx, st)
	}
	return s.pollGit(ctx, st)
}

// pollGit is Poll for a Git source, after beginPoll.
func (s *Source) pollGit(ctx context.Context, st pollStart) (Revision, Result, error) {
	prev, hasPrev, res := st.prev, st.hasPrev, st.res
	creds, err := s.readCredentials()
	if err != nil {
		return Revision{}, res, err
	}
	tgt, err := s.pollTarget(ctx, creds, hasPrev)
	if err != nil {
		return Revision{}, res, err
	}
	if hasPrev && prev.SHA == tgt.commit.String() && prev.Tag == tgt.tag && isDir(prev.Dir) {
		return prev, res, nil
	}

	var (
		rev   Revision
		moved Movement
	)
	for attempt := 0; ; attempt++ {
		var corrupt error
		rev, moved, corrupt, err = s.update(ctx, creds, tgt, prev, hasPrev, false)
		if corrupt == nil {
			break
		}
		if attempt == 1 {
			return Revision{}, res, s.newError(KindCorruptCache, "read cache", corrupt,
				fmt.Sprintf("the cache at %s stays unreadable after a fresh clone; check the disk", s.repoDir()))
		}
		res.CacheRecovered = s.newError(KindCorruptCache, "read cache", corrupt,
			"the cached repository was deleted and cloned again")
		if rmErr := os.RemoveAll(s.repoDir()); rmErr != nil {
			return Revision{}, res, s.newError(KindCache, "delete corrupt cache", rmErr, "remove "+s.repoDir()+" by hand")
		}
	}
	if err != nil {
		return Revision{}, res, err
	}
	res.Moved = moved
	if !hasPrev {
		res.Moved = Updated
	}

	s.putInForce(rev)
	return rev, res, nil
}

// pollStart is where a poll of a Git or an OCI source starts from: the
// revision in force (hasPrev false before the first successful poll) and
// the Result so far, which names it.
type pollStart struct {
	prev    Revision
	hasPrev bool
	res     Result
}

// beginPoll is what a poll of a Git or an OCI source does first: it takes
// the previous revision (named in the Result), refuses a cancelled
// context, and answers a commit or digest pin already checked out without
// asking the remote. done says the poll ends here with st.prev and err.
func (s *Source) beginPoll(ctx context.Context) (st pollStart, done bool, err error) {
	st.prev, st.hasPrev = s.Last()
	if st.hasPrev {
		st.res.Previous = st.prev.SHA
	}
	if err := ctx.Err(); err != nil {
		return pollStart{hasPrev: st.hasPrev, res: st.res}, true, s.newError(KindCanceled, "poll", err, "")
	}
	// A pin never moves: once checked out there is nothing to ask.
	if s.kind == refCommit && st.hasPrev && st.prev.SHA == s.refName && isDir(st.prev.Dir) {
		return st, true, nil
	}
	return st, false, nil
}

// pollTarget is what a poll fetches. With a revision in force (hasPrev)
// it lists the remote's refs first, so that a ref that did not move costs
// that one listing and nothing more. The first poll of a branch or a tag
// (every start of syncd run, every one-shot command) fetches the ref by
// name without listing first: the fetch's own ref advertisement tells its
// commit (fetchedCommit), which saves a round trip to the server (over
// SSH a whole connection). A semver range or a commit needs the listing
// to be resolved.
func (s *Source) pollTarget(ctx context.Context, creds credentials, hasPrev bool) (target, error) {
	if tgt, ok := s.namedTarget(); ok && !hasPrev {
		return tgt, nil
	}
	return s.resolveRemote(ctx, creds)
}

// namedTarget is the target of a branch or a tag, named without asking
// the server (its commit unknown); ok is false for a semver range or a
// commit.
func (s *Source) namedTarget() (tgt target, ok bool) {
	switch s.kind {
	case refBranch:
		return target{ref: plumbing.NewBranchReferenceName(s.refName)}, true
	case refTag:
		return target{ref: plumbing.NewTagReferenceName(s.refName), tag: s.refName}, true
	}
	return target{}, false
}

// refMissing is the error of a branch or a tag the server does not have,
// whether a listing or a fetch by name found it missing.
func (s *Source) refMissing(op string) *Error {
	if s.kind == refTag {
		return s.newError(KindRefNotFound, op, fmt.Errorf("tag %q does not exist on the server", s.refName),
			previousInForce+"; push the tag or change git.tag")
	}
	return s.newError(KindRefNotFound, op, fmt.Errorf("branch %q does not exist on the server", s.refName),
		previousInForce+"; restore the branch or change git.branch")
}

// emptyRemote is the error of a repository with nothing pushed to it.
func (s *Source) emptyRemote(op string, err error) *Error {
	return s.newError(KindRefNotFound, op, err, "push something to the repository")
}

// resolveRemote lists the remote refs (one ref advertisement) and resolves
// the configured ref.
func (s *Source) resolveRemote(ctx context.Context, creds credentials) (target, error) {
	remote := git.NewRemote(memory.NewStorage(), &gitconfig.RemoteConfig{Name: "origin", URLs: []string{s.url}})
	refs, err := remote.ListContext(ctx, &git.ListOptions{Auth: creds.auth, PeelingOption: git.AppendPeeled})
	if err != nil {
		if errors.Is(err, transport.ErrEmptyRemoteRepository) {
			return target{}, s.emptyRemote("list refs", err)
		}
		return target{}, s.transportError("list refs", err, creds)
	}
	return s.resolve(refs)
}

// resolve picks the target from an ls-remote listing.
func (s *Source) resolve(refs []*plumbing.Reference) (target, error) {
	hashes := map[plumbing.ReferenceName]plumbing.Hash{}
	for _, r := range refs {
		if r.Type() == plumbing.HashReference {
			hashes[r.Name()] = r.Hash()
		}
	}
	// peeled returns the commit a ref points to (annotated tags peeled).
	peeled := func(name plumbing.ReferenceName) (plumbing.Hash, bool) {
		if h, ok := hashes[name+"^{}"]; ok {
			return h, true
		}
		h, ok := hashes[name]
		return h, ok
	}
	switch s.kind {
	case refBranch:
		name := plumbing.NewBranchReferenceName(s.refName)
		h, ok := hashes[name]
		if !ok {
			return target{}, s.refMissing("resolve")
		}
		return target{commit: h, ref: name}, nil
	case refTag:
		name := plumbing.NewTagReferenceName(s.refName)
		h, ok := peeled(name)
		if !ok {
			return target{}, s.refMissing("resolve")
		}
		return target{commit: h, ref: name, tag: s.refName}, nil
	case refSemver:
		type cand struct {
			v    *semver.Version
			name string
		}
		var cands []cand
		for name := range hashes {
			if !name.IsTag() || strings.HasSuffix(name.String(), "^{}") {
				continue
			}
			tag := name.Short()
			v, err := semver.NewVersion(tag)
			if err != nil || !s.constraint.Check(v) {
				continue
			}
			cands = append(cands, cand{v, tag})
		}
		if len(cands) == 0 {
			return target{}, s.newError(KindRefNotFound, "resolve", fmt.Errorf("no tag matches semver range %q", s.refName),
				previousInForce+"; push a matching tag or widen git.semver")
		}
		sort.Slice(cands, func(i, j int) bool {
			if c := cands[i].v.Compare(cands[j].v); c != 0 {
				return c > 0
			}
			return cands[i].name < cands[j].name
		})
		name := plumbing.NewTagReferenceName(cands[0].name)
		h, _ := peeled(name)
		return target{commit: h, ref: name, tag: cands[0].name}, nil
	default:
		want := plumbing.NewHash(s.refName)
		// A commit that is the tip of a branch or tag can be fetched
		// shallow through that ref; prefer branches, then sorted order.
		var tips []plumbing.ReferenceName
		for name, h := range hashes {
			if strings.HasSuffix(name.String(), "^{}") {
				continue
			}
			if ph, _ := peeled(name); ph == want && (name.IsBranch() || name.IsTag()) {
				tips = append(tips, name)
			}
			_ = h
		}
		sort.Slice(tips, func(i, j int) bool {
			if tips[i].IsBranch() != tips[j].IsBranch() {
				return tips[i].IsBranch()
			}
			return tips[i] < tips[j]
		})
		t := target{commit: want}
		if len(tips) > 0 {
			t.ref = tips[0]
		}
		return t, nil
	}
}

func (s *Source) repoDir() string  { return filepath.Join(s.dir, "repo") }
func (s *Source) treesDir() string { return filepath.Join(s.dir, "trees") }

// openRepo opens the cached bare repository, creating it when missing. A
// repository that cannot be opened is reported as corrupt. When full is
// set a shallow repository is replaced by an empty one (a commit that is
// no tip needs whole history). The repository keeps its pack files open
// (go-git otherwise reopens a pack for every object read); closeRepo
// releases them and may be called more than once.
func (s *Source) openRepo(full bool) (repo *git.Repository, closeRepo func(), corrupt error, err error) {
	dir := s.repoDir()
	open := func(create bool) (*git.Repository, func(), error) {
		st := filesystem.NewStorageWithOptions(osfs.New(dir), cache.NewObjectLRUDefault(), filesystem.Options{KeepDescriptors: true})
		var once sync.Once
		closeFn := func() { once.Do(func() { _ = st.Close() }) }
		var r *git.Repository
		var err error
		if create {
			r, err = git.Init(st, nil)
		} else {
			r, err = git.Open(st, nil)
		}
		if err != nil {
			closeFn()
			return nil, nil, err
		}
		return r, closeFn, nil
	}
	if _, statErr := os.Stat(dir); statErr == nil {
		repo, closeRepo, openErr := open(false)
		if openErr != nil {
			return nil, nil, fmt.Errorf("open %s: %w", dir, openErr), nil
		}
		rc, cfgErr := repo.Remote("origin")
		shallow, shErr := repo.Storer.Shallow()
		switch {
		case cfgErr != nil:
			closeRepo()
			return nil, nil, fmt.Errorf("read remote config in %s: %w", dir, cfgErr), nil
		case shErr != nil:
			closeRepo()
			return nil, nil, fmt.Errorf("read shallow file in %s: %w", dir, shErr), nil
		case len(rc.Config().URLs) != 1 || rc.Config().URLs[0] != s.url, full && len(shallow) > 0:
			// The URL changed, or history is needed: start over.
			closeRepo()
			if err := os.RemoveAll(dir); err != nil {
				return nil, nil, nil, s.newError(KindCache, "reset cache", err, "remove "+dir+" by hand")
			}
		default:
			return repo, closeRepo, nil, nil
		}
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, nil, nil, s.newError(KindCache, "create cache", err, "check that "+s.dir+" is writable")
	}
	repo, closeRepo, err = open(true)
	if err != nil {
		return nil, nil, nil, s.newError(KindCache, "create cache", err, "check that "+s.dir+" is writable")
	}
	if _, err := repo.CreateRemote(&gitconfig.RemoteConfig{Name: "origin", URLs: []string{s.url}}); err != nil {
		closeRepo()
		return nil, nil, nil, s.newError(KindCache, "create cache", err, "check that "+s.dir+" is writable")
	}
	return repo, closeRepo, nil, nil
}

// localRef is where a fetched remote ref is stored in the cache.
func localRef(name plumbing.ReferenceName) plumbing.ReferenceName {
	if name.IsBranch() {
		return plumbing.NewRemoteReferenceName("origin", name.Short())
	}
	return name
}

// fetch fetches tgt at the given depth (0 = whole history).
func (s *Source) fetch(ctx context.Context, repo *git.Repository, creds credentials, tgt target, depth int) error {
	var specs []gitconfig.RefSpec
	if tgt.ref != "" {
		specs = []gitconfig.RefSpec{gitconfig.RefSpec(fmt.Sprintf("+%s:%s", tgt.ref, localRef(tgt.ref)))}
	} else {
		specs = []gitconfig.RefSpec{"+refs/heads/*:refs/remotes/origin/*", "+refs/tags/*:refs/tags/*"}
		depth = 0
	}
	err := repo.FetchContext(ctx, &git.FetchOptions{
		RemoteName: "origin",
		RefSpecs:   specs,
		Depth:      depth,
		Auth:       creds.auth,
		Tags:       git.NoTags,
		Force:      true,
	})
	if errors.Is(err, git.NoErrAlreadyUpToDate) {
		return nil
	}
	return err
}

// update fetches and checks out tgt. A non-nil corrupt error means the
// cache could not be read and the caller should delete it and retry.
//
// Into an empty cache the target is fetched with depth 1. Into a cache that
// already holds the previous revision it is fetched without a depth, so the
// server sends only what is not reachable from the commits the cache has
// (a shallow fetch would make git resend the whole tree, since go-git cannot
// take thin packs). The server then assumes the cache has the previous
// commit's whole history; that holds for every commit between the new one
// and the previous one, so the new commit descends from the previous one
// exactly when the local history walk reaches it. When it does not (a
// rewrite), or when the new tree needs objects the cache never had, the
// cache is emptied and the target fetched again with depth 1.
func (s *Source) update(ctx context.Context, creds credentials, tgt target, prev Revision, hasPrev, refetch bool) (rev Revision, moved Movement, corrupt, err error) {
	repo, closeRepo, corrupt, err := s.openRepo(tgt.ref == "")
	if corrupt != nil || err != nil {
		return Revision{}, 0, corrupt, err
	}
	defer closeRepo()
	fresh, ferr := isEmpty(repo)
	if ferr != nil {
		return Revision{}, 0, ferr, nil
	}
	depth := 0
	if fresh {
		depth = s.cloneDepth(hasPrev)
	}
	if corrupt, err := s.fetchTarget(ctx, repo, creds, tgt, depth); corrupt != nil || err != nil {
		if fresh && corrupt == nil {
			// A source that never fetched (no answer, no such branch)
			// leaves no repository on disk; the fetch's error is the one
			// to report, so a failed removal is not.
			closeRepo()
			_ = s.resetRepo()
		}
		return Revision{}, 0, corrupt, err
	}
	commit, corrupt, err := s.fetchedCommit(repo, tgt)
	if corrupt != nil || err != nil {
		return Revision{}, 0, corrupt, err
	}

	moved = Updated
	if refetch {
		moved = Rewritten
	}
	next, err := s.checkHistory(repo, tgt, commit, prev, hasPrev, fresh, refetch)
	if err != nil {
		return Revision{}, 0, nil, err
	}
	if next != historyOK {
		closeRepo()
		if err := s.resetRepo(); err != nil {
			return Revision{}, 0, nil, err
		}
		return s.update(ctx, creds, tgt, prev, hasPrev, next == historyRewritten || refetch)
	}

	signer, verr := s.verify(repo, tgt, commit)
	if verr != nil {
		return Revision{}, 0, nil, verr
	}
	dir, corrupt, err := s.checkoutCommit(repo, commit, prev, hasPrev)
	if corrupt != nil && errors.Is(corrupt, plumbing.ErrObjectNotFound) && !fresh && !refetch && tgt.ref != "" {
		// The server assumed history the shallow cache lacks (a merge of
		// an old branch): fetch the target afresh.
		closeRepo()
		if err := s.resetRepo(); err != nil {
			return Revision{}, 0, nil, err
		}
		rev, _, corrupt, err = s.update(ctx, creds, tgt, prev, hasPrev, true)
		return rev, moved, corrupt, err
	}
	if corrupt != nil || err != nil {
		return Revision{}, 0, corrupt, err
	}
	if tgt.ref != "" {
		dropOtherRefs(repo, localRef(tgt.ref))
	}
	return s.revisionOf(tgt, commit, signer, dir), moved, nil, nil
}

// fetchTarget fetches tgt into repo at the given depth. A failed fetch
// leaves no half-written pack; one that looks like a network error is
// reported as corrupt when the cache turns out broken.
func (s *Source) fetchTarget(ctx context.Context, repo *git.Repository, creds credentials, tgt target, depth int) (corrupt, err error) {
	ferr := s.fetch(ctx, repo, creds, tgt, depth)
	if ferr == nil {
		return nil, nil
	}
	removeTempPacks(s.repoDir())
	if e := s.fetchedNothing(ferr); e != nil {
		return nil, e
	}
	e := s.transportError("fetch", ferr, creds)
	// A broken cache can fail a fetch with what looks like a network
	// error (a truncated pack reads as an unexpected EOF): check.
	if e.Kind == KindFetch || e.Kind == KindUnreachable {
		if herr := checkHealth(repo); herr != nil {
			return fmt.Errorf("%w (fetch failed: %s)", herr, e.Err.Error()), nil
		}
	}
	return nil, e
}

// fetchedNothing is the error of a fetch that failed because the server
// has no such branch or tag (fetched by name, or deleted since it was
// listed) or nothing at all; nil for any other failure, and for the tag
// a semver range picked or the tip a commit was fetched through (deleted
// since the listing: the fetch's own error says which ref).
func (s *Source) fetchedNothing(err error) *Error {
	switch {
	case errors.Is(err, transport.ErrEmptyRemoteRepository):
		return s.emptyRemote("fetch", err)
	case (s.kind == refBranch || s.kind == refTag) && errors.Is(err, git.NoMatchingRefSpecError{}):
		return s.refMissing("fetch")
	}
	return nil
}

// fetchedCommit reads the commit fetched for tgt. The ref may have moved
// since it was listed: it trusts what was fetched, peeling a tag.
func (s *Source) fetchedCommit(repo *git.Repository, tgt target) (commit *object.Commit, corrupt, err error) {
	want := tgt.commit
	if tgt.ref != "" {
		ref, rerr := repo.Reference(localRef(tgt.ref), true)
		if rerr != nil {
			return nil, fmt.Errorf("read fetched ref %s: %w", localRef(tgt.ref), rerr), nil
		}
		want = ref.Hash()
		if tagObj, terr := repo.TagObject(want); terr == nil {
			c, cerr := tagObj.Commit()
			if cerr != nil {
				return nil, nil, s.newError(KindRefNotFound, "resolve", fmt.Errorf("tag %s does not point to a commit: %w", tgt.tag, cerr), "point the tag at a commit")
			}
			want = c.Hash
		}
	}
	commit, cerr := repo.CommitObject(want)
	if cerr != nil {
		if tgt.ref == "" && errors.Is(cerr, plumbing.ErrObjectNotFound) {
			return nil, nil, s.newError(KindRefNotFound, "resolve",
				fmt.Errorf("commit %s is not reachable from any branch or tag", want),
				previousInForce+"; check git.commit")
		}
		return nil, fmt.Errorf("read commit %s: %w", want, cerr), nil
	}
	return commit, nil, nil
}

// historyCheck is what update does after checking how the fetched commit
// relates to the previous revision.
type historyCheck int

const (
	// historyOK: go on to check the commit out.
	historyOK historyCheck = iota
	// historyIncomplete: the server assumed history the cache lacks; clone
	// the whole history (cloneDepth) and look again.
	historyIncomplete
	// historyRewritten: a rewrite; objects the new tree shares with older
	// history were not sent, so start the cache over.
	historyRewritten
)

// checkHistory decides whether the fetched commit can be checked out from
// this cache, must be fetched again into an empty one, or (when the source
// guards ancestry) is refused as a rewrite.
func (s *Source) checkHistory(repo *git.Repository, tgt target, commit *object.Commit, prev Revision, hasPrev, fresh, refetch bool) (historyCheck, error) {
	switch {
	case s.guardsAncestry() && hasPrev && prev.SHA != commit.Hash.String():
		switch a := ancestryOf(repo, commit.Hash, plumbing.NewHash(prev.SHA)); {
		case a == unknown && !fresh:
			return historyIncomplete, nil
		case a != descends:
			return historyOK, s.rewriteRefused(commit.Hash, prev.SHA, a)
		}
	case !refetch && hasPrev && !fresh && prev.SHA != commit.Hash.String() && tgt.ref != "":
		if !reaches(repo, commit.Hash, plumbing.NewHash(prev.SHA)) {
			return historyRewritten, nil
		}
	}
	return historyOK, nil
}

// checkoutCommit checks the commit's tree out; a tree that cannot be read
// is a corrupt cache.
func (s *Source) checkoutCommit(repo *git.Repository, commit *object.Commit, prev Revision, hasPrev bool) (dir string, corrupt, err error) {
	tree, terr := commit.Tree()
	if terr != nil {
		return "", fmt.Errorf("read tree of %s: %w", commit.Hash, terr), nil
	}
	return s.checkout(repo, commit.Hash, tree, prevTree(repo, prev, hasPrev), prev.Dir)
}

// revisionOf is the revision of a commit checked out into dir.
func (s *Source) revisionOf(tgt target, commit *object.Commit, signer, dir string) Revision {
	return Revision{
		Source:     s.name,
		URL:        s.displayURL,
		Ref:        s.refString(),
		SHA:        commit.Hash.String(),
		Tag:        tgt.tag,
		CommitTime: commit.Committer.When,
		Author:     fmt.Sprintf("%s <%s>", commit.Author.Name, commit.Author.Email),
		Subject:    subject(commit.Message),
		Signer:     signer,
		Dir:        dir,
		Tree:       commit.TreeHash.String(),
	}
}

// resetRepo deletes the cached repository so the next update clones
// afresh; the caller has closed it.
func (s *Source) resetRepo() *Error {
	if err := os.RemoveAll(s.repoDir()); err != nil {
		return s.newError(KindCache, "reset cache", err, "remove "+s.repoDir()+" by hand")
	}
	return nil
}

// removeTempPacks deletes the pack a failed fetch left half-written
// (go-git names it objects/pack/tmp_pack_*), so failures during a long
// outage do not fill the disk. Polls of a source are serialised: no fetch
// is writing one. Failures are ignored; the next failed fetch retries.
func removeTempPacks(repoDir string) {
	tmp, _ := filepath.Glob(filepath.Join(repoDir, "objects", "pack", "tmp_pack_*"))
	for _, p := range tmp {
		_ = os.Remove(p)
	}
}

// prevTree returns the previous revision's tree when the cache still has
// it and its directory exists, so unchanged files can be linked from there.
func prevTree(repo *git.Repository, prev Revision, hasPrev bool) *object.Tree {
	if !hasPrev || !isDir(prev.Dir) {
		return nil
	}
	c, err := repo.CommitObject(plumbing.NewHash(prev.SHA))
	if err != nil {
		return nil
	}
	t, err := c.Tree()
	if err != nil {
		return nil
	}
	return t
}

// isEmpty reports whether the cache holds no refs yet.
func isEmpty(repo *git.Repository) (bool, error) {
	refs, err := repo.References()
	if err != nil {
		return false, fmt.Errorf("list cached refs: %w", err)
	}
	defer refs.Close()
	empty := true
	err = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() == plumbing.HashReference {
			empty = false
			return storerStop
		}
		return nil
	})
	if err != nil && !errors.Is(err, storerStop) {
		return false, fmt.Errorf("list cached refs: %w", err)
	}
	return empty, nil
}

var storerStop = errors.New("stop")

// dropOtherRefs deletes cached refs other than keep, so the next fetch
// only offers the current revision's history as "have". Failures only
// cost bandwidth later and are ignored.
func dropOtherRefs(repo *git.Repository, keep plumbing.ReferenceName) {
	refs, err := repo.References()
	if err != nil {
		return
	}
	var drop []plumbing.ReferenceName
	_ = refs.ForEach(func(r *plumbing.Reference) error {
		if r.Name() != keep && r.Name() != plumbing.HEAD {
			drop = append(drop, r.Name())
		}
		return nil
	})
	refs.Close()
	for _, n := range drop {
		_ = repo.Storer.RemoveReference(n)
	}
}

// checkHealth reads every ref's commit and root tree.
func checkHealth(repo *git.Repository) error {
	refs, err := repo.References()
	if err != nil {
		return fmt.Errorf("list cached refs: %w", err)
	}
	defer refs.Close()
	return refs.ForEach(func(r *plumbing.Reference) error {
		if r.Type() != plumbing.HashReference {
			return nil
		}
		h := r.Hash()
		if t, err := repo.TagObject(h); err == nil {
			h = t.Target
		}
		c, err := repo.CommitObject(h)
		if err != nil {
			return fmt.Errorf("read cached commit %s of %s: %w", h, r.Name(), err)
		}
		if _, err := c.Tree(); err != nil {
			return fmt.Errorf("read cached tree of %s: %w", h, err)
		}
		return nil
	})
}

func subject(msg string) string {
	if i := strings.IndexByte(msg, '\n'); i >= 0 {
		msg = msg[:i]
	}
	return strings.TrimSpace(msg)
}

func isDir(p string) bool {
	if p == "" {
		return false
	}
	fi, err := os.Stat(p)
	return err == nil && fi.IsDir()
}
