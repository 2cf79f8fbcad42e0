package source

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/ProtonMail/go-crypto/openpgp"
	git "github.com/go-git/go-git/v5"
	"github.com/go-git/go-git/v5/plumbing"
	"github.com/go-git/go-git/v5/plumbing/object"
	"github.com/go-git/go-git/v5/storage/memory"
)

// forcePush points main at sha on the server.
func (u *upstream) forcePush(sha string) {
	u.t.Helper()
	u.git("reset", "-q", "--hard", sha)
	u.git("push", "-q", "-f", "origin", "main")
}

// verifiedBranch is an upstream whose main is base (unsigned) then s1, s2,
// s3 signed by key, and a verified source that polled s2 first (a depth-1
// cache) and then s3.
type verifiedBranch struct {
	u          *upstream
	s          *Source
	key        *openpgp.Entity
	s1, s2, s3 string
	last       Revision // s3
}

func newVerifiedBranch(t *testing.T, allowRewrites bool) *verifiedBranch {
	t.Helper()
	key, armored := newPGPKey(t, "Release Bot")
	keysFile := writeFile(t, filepath.Join(t.TempDir(), "keys.asc"), armored)
	b := &verifiedBranch{u: newUpstream(t), key: key}
	b.u.commit("base", map[string]string{"base": "x"})
	b.s1 = b.u.goGitCommit("s1", map[string]string{"f": "1"}, key)
	b.s2 = b.u.goGitCommit("s2", map[string]string{"f": "2"}, key)
	b.u.push("main")
	srv := newHTTPServer(t, b.u, "")
	b.s = newSource(t, Spec{URL: srv.url(), Branch: "main",
		Verify: &Verify{Mode: VerifyHead, KeysFile: keysFile, AllowRewrites: allowRewrites}})
	if rev, _ := poll(t, b.s); rev.SHA != b.s2 {
		t.Fatalf("first poll = %s, want s2 %s", rev.SHA, b.s2)
	}
	b.s3 = b.u.goGitCommit("s3", map[string]string{"f": "3"}, key)
	b.u.push("main")
	var res Result
	b.last, res = poll(t, b.s)
	if b.last.SHA != b.s3 || res.Moved != Updated {
		t.Fatalf("fast-forward to s3 = %s %v, want %s Updated", b.last.SHA, res.Moved, b.s3)
	}
	return b
}

// rewrites are force-pushes of main to signed commits that do not descend
// from s3; each returns the SHA main now names.
var rewrites = map[string]func(b *verifiedBranch) string{
	// s2 is in the cache but its parent is not: the walk from s2 ends
	// at the shallow boundary and needs whole history.
	"rewind to a cached older signed commit": func(b *verifiedBranch) string {
		b.u.forcePush(b.s2)
		return b.s2
	},
	// s1 is below the depth-1 cache: the server sends nothing for it.
	"rewind below the cached history": func(b *verifiedBranch) string {
		b.u.forcePush(b.s1)
		return b.s1
	},
	"signed commit on an older base": func(b *verifiedBranch) string {
		b.u.forcePush(b.s2)
		h := b.u.goGitCommit("sibling", map[string]string{"f": "sibling"}, b.key)
		b.u.push("-f", "main")
		return h
	},
}

func TestPollVerifiedBranchRefusesRewrites(t *testing.T) {
	b := newVerifiedBranch(t, false)
	for name, rewrite := range rewrites {
		t.Run(name, func(t *testing.T) {
			head := rewrite(b)
			e := pollErr(t, b.s, KindVerification)
			for _, want := range []string{"branch main moved to " + head, "does not descend from the last verified head " + b.s3, "git.verify.allowRewrites: true on source src"} {
				if !strings.Contains(e.Error(), want) {
					t.Errorf("error %q does not say %q", e, want)
				}
			}
			// Refused again while the branch stays rewritten.
			pollErr(t, b.s, KindVerification)
			if last, _ := b.s.Last(); last != b.last || readTree(t, last.Dir)["f"] != "3" {
				t.Errorf("Last() = %s, want s3 %s still in force with its tree", last.SHA, b.s3)
			}

			b.u.forcePush(b.s3)
			if rev, res := poll(t, b.s); rev.SHA != b.s3 || res.Moved != Unchanged {
				t.Errorf("with main back at s3: %s %v, want %s Unchanged", rev.SHA, res.Moved, b.s3)
			}
		})
	}

	// Fast-forwards are followed, also into a cache that was deleted (it
	// is cloned with whole history to show descent).
	for _, deleteCache := range []bool{false, true} {
		if deleteCache {
			if err := os.RemoveAll(b.s.repoDir()); err != nil {
				t.Fatal(err)
			}
		}
		prev, _ := b.s.Last()
		next := b.u.goGitCommit("next", map[string]string{"f": "next"}, b.key)
		b.u.push("main")
		rev, res := poll(t, b.s)
		if rev.SHA != next || res.Moved != Updated || res.Previous != prev.SHA {
			t.Errorf("fast-forward (cache deleted: %v) = %s %v (prev %s), want %s Updated (prev %s)", deleteCache, rev.SHA, res.Moved, res.Previous, next, prev.SHA)
		}
	}
}

func TestPollVerifiedBranchAllowRewritesFollows(t *testing.T) {
	for name, rewrite := range rewrites {
		t.Run(name, func(t *testing.T) {
			b := newVerifiedBranch(t, true)
			head := rewrite(b)
			rev, res := poll(t, b.s)
			if rev.SHA != head || res.Previous != b.s3 {
				t.Fatalf("rewrite = %s (prev %s), want %s (prev %s)", rev.SHA, res.Previous, head, b.s3)
			}
			if !strings.Contains(rev.Signer, "Release Bot") {
				t.Errorf("rewritten head signer = %q, want Release Bot", rev.Signer)
			}
			next := b.u.goGitCommit("after", map[string]string{"f": "after"}, b.key)
			b.u.push("main")
			if rev, res := poll(t, b.s); rev.SHA != next || res.Moved != Updated {
				t.Errorf("fast-forward after the rewrite = %s %v, want %s Updated", rev.SHA, res.Moved, next)
			}
		})
	}
}

func TestAncestryOf(t *testing.T) {
	repo, err := git.Init(memory.NewStorage(), nil)
	if err != nil {
		t.Fatal(err)
	}
	missing := plumbing.NewHash("0123456789abcdef0123456789abcdef01234567")
	commit := func(msg string, parents ...plumbing.Hash) plumbing.Hash {
		t.Helper()
		sig := object.Signature{Name: "A", Email: "a@example.com", When: time.Unix(0, 0)}
		c := &object.Commit{Author: sig, Committer: sig, Message: msg, TreeHash: plumbing.ZeroHash, ParentHashes: parents}
		obj := repo.Storer.NewEncodedObject()
		if err := c.Encode(obj); err != nil {
			t.Fatal(err)
		}
		h, err := repo.Storer.SetEncodedObject(obj)
		if err != nil {
			t.Fatal(err)
		}
		return h
	}
	root := commit("root")
	a := commit("a", root)
	b := commit("b", a)
	side := commit("side", root)
	merge := commit("merge", side, b) // the old head is the second parent
	shallow := commit("shallow", missing)
	partial := commit("partial", shallow, root)

	tests := map[string]struct {
		newH, oldH plumbing.Hash
		want       ancestry
	}{
		"fast-forward":                          {newH: b, oldH: a, want: descends},
		"same commit":                           {newH: a, oldH: a, want: descends},
		"through a merge's second parent":       {newH: merge, oldH: a, want: descends},
		"rewind to an ancestor":                 {newH: root, oldH: b, want: diverged},
		"sibling line":                          {newH: side, oldH: a, want: diverged},
		"history ends at a missing commit":      {newH: shallow, oldH: a, want: unknown},
		"one parent complete, one missing":      {newH: partial, oldH: a, want: unknown},
		"found past a missing parent's sibling": {newH: partial, oldH: root, want: descends},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := ancestryOf(repo, tc.newH, tc.oldH); got != tc.want {
				t.Errorf("ancestryOf = %d, want %d", got, tc.want)
			}
		})
	}
}
