package source

import (
	"os"
	"strings"
	"testing"

	git "github.com/go-git/go-git/v5"
	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

// cacheShallow returns the shallow commits recorded in the source's cached
// repository: none when the cache holds whole history.
func cacheShallow(t testing.TB, s *Source) []string {
	t.Helper()
	repo, err := git.PlainOpen(s.repoDir())
	if err != nil {
		t.Fatalf("open cache: %v", err)
	}
	hs, err := repo.Storer.Shallow()
	if err != nil {
		t.Fatalf("read shallow file of the cache: %v", err)
	}
	out := make([]string, len(hs))
	for i, h := range hs {
		out[i] = h.String()
	}
	return out
}

func TestPollResolvesTagsSemverAndCommits(t *testing.T) {
	u := newUpstream(t)
	c0 := u.commit("zero", map[string]string{"f": "0"}) // no branch or tag points here
	c1 := u.commit("one", map[string]string{"f": "1"})
	u.git("tag", "v1.0.0")
	c2 := u.commit("two", map[string]string{"f": "2"})
	u.git("tag", "-a", "-m", "release 1.2.0", "v1.2.0")
	c3 := u.commit("three", map[string]string{"f": "3"})
	u.git("tag", "-a", "-m", "release 1.3.5", "v1.3.5")
	u.git("tag", "1.3.6-rc.1") // pre-release: excluded by a range without one
	c4 := u.commit("four", map[string]string{"f": "4"})
	u.git("tag", "v2.0.0")
	u.git("tag", "not-a-version")
	u.push("main", "--tags")
	srv := newHTTPServer(t, u, "")

	// Every ref that names a tip is fetched with depth 1, so the cache is
	// shallow at exactly that commit; only a commit that is no tip needs
	// (and gets) whole history.
	tests := map[string]struct {
		git     Spec
		wantSHA string
		wantTag string
		wantF   string
		// wantShallow is the cache's shallow list; nil for whole history.
		wantShallow []string
	}{
		"lightweight tag":               {git: Spec{Tag: "v1.0.0"}, wantSHA: c1, wantTag: "v1.0.0", wantF: "1", wantShallow: []string{c1}},
		"annotated tag is peeled":       {git: Spec{Tag: "v1.2.0"}, wantSHA: c2, wantTag: "v1.2.0", wantF: "2", wantShallow: []string{c2}},
		"semver picks highest":          {git: Spec{Semver: ">=1.2.0 <2.0.0"}, wantSHA: c3, wantTag: "v1.3.5", wantF: "3", wantShallow: []string{c3}},
		"semver major":                  {git: Spec{Semver: "^2"}, wantSHA: c4, wantTag: "v2.0.0", wantF: "4", wantShallow: []string{c4}},
		"commit that is a tip":          {git: Spec{Commit: c4}, wantSHA: c4, wantF: "4", wantShallow: []string{c4}},
		"commit that is no tip":         {git: Spec{Commit: c0}, wantSHA: c0, wantF: "0"},
		"commit only under a tag":       {git: Spec{Commit: c1}, wantSHA: c1, wantF: "1", wantShallow: []string{c1}},
		"commit under an annotated tag": {git: Spec{Commit: c2}, wantSHA: c2, wantF: "2", wantShallow: []string{c2}},
		"branch follows the branch":     {git: Spec{Branch: "main"}, wantSHA: c4, wantF: "4", wantShallow: []string{c4}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			tc.git.URL = srv.url()
			s := newSource(t, tc.git)
			rev, res := poll(t, s)
			if rev.SHA != tc.wantSHA || rev.Tag != tc.wantTag || res.Moved != Updated {
				t.Errorf("poll = %s tag %q %v, want %s tag %q Updated", rev.SHA, rev.Tag, res.Moved, tc.wantSHA, tc.wantTag)
			}
			if got := readTree(t, rev.Dir)["f"]; got != tc.wantF {
				t.Errorf("tree has f=%q, want %q", got, tc.wantF)
			}
			if diff := cmp.Diff(tc.wantShallow, cacheShallow(t, s), cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("shallow commits of the cache (-want +got):\n%s", diff)
			}
		})
	}
}

func TestPollSemverFollowsNewTag(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", nil)
	u.git("tag", "v1.2.0")
	u.push("main", "--tags")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Semver: ">=1.2.0 <2.0.0"})
	poll(t, s)
	c2 := u.commit("two", nil)
	u.git("tag", "-a", "-m", "x", "v1.4.0")
	u.git("tag", "v2.1.0")
	u.push("main", "--tags")
	rev, res := poll(t, s)
	if rev.SHA != c2 || rev.Tag != "v1.4.0" || res.Moved != Updated {
		t.Errorf("poll = %s %q %v, want %s v1.4.0 Updated", rev.SHA, rev.Tag, res.Moved, c2)
	}
}

func TestPollCommitPinDoesNotAskAgain(t *testing.T) {
	u := newUpstream(t)
	c1 := u.commit("one", nil)
	u.commit("two", nil)
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Commit: c1})
	poll(t, s)
	srv.counts()
	rev, res := poll(t, s)
	if rev.SHA != c1 || res.Moved != Unchanged {
		t.Errorf("second poll = %s %v, want %s Unchanged", rev.SHA, res.Moved, c1)
	}
	if refs, posts, _ := srv.counts(); refs+posts != 0 {
		t.Errorf("second poll of a pinned commit made %d requests, want 0", refs+posts)
	}
}

func TestPollRefNotFound(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", nil)
	u.git("tag", "v0.1.0")
	u.push("main", "--tags")
	srv := newHTTPServer(t, u, "")
	tests := map[string]struct {
		spec Spec
		want string // in the error
	}{
		"branch": {Spec{Branch: "nope"}, `branch "nope" does not exist on the server`},
		"tag":    {Spec{Tag: "v9"}, `tag "v9" does not exist on the server`},
		"semver": {Spec{Semver: ">=1.0.0"}, `no tag matches semver range ">=1.0.0"`},
		"commit": {Spec{Commit: "0123456789012345678901234567890123456789"}, "is not reachable from any branch or tag"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			g := tc.spec
			g.URL = srv.url()
			s := newSource(t, g)
			e := pollErr(t, s, KindRefNotFound)
			if !strings.Contains(e.Error(), tc.want) {
				t.Errorf("error = %v, want it to say %q", e, tc.want)
			}
			if _, ok := s.Last(); ok {
				t.Error("Last() reports a revision after a failed first poll")
			}
			// No revision was ever in force: the hint does not say a
			// previous one stays.
			if !strings.HasPrefix(e.Hint, noneInForce) {
				t.Errorf("hint = %q, want it to start %q", e.Hint, noneInForce)
			}
			// Nothing was fetched (a commit that is no tip fetches every
			// branch first): no repository is left in the cache.
			if _, err := os.Stat(s.repoDir()); name != "commit" && !os.IsNotExist(err) {
				t.Errorf("after a first poll that fetched nothing the cache holds %s (stat error %v)", s.repoDir(), err)
			}
		})
	}
}

// TestPollRefDeletedAfterFirstPoll checks a branch or tag deleted from the
// server after a first poll (fetched by name) is reported missing by the
// next poll (which lists the refs), and the revision in force is kept.
func TestPollRefDeletedAfterFirstPoll(t *testing.T) {
	for name, g := range map[string]Spec{"branch": {Branch: "topic"}, "tag": {Tag: "v1"}} {
		t.Run(name, func(t *testing.T) {
			u := newUpstream(t)
			sha := u.commit("one", nil)
			u.git("branch", "topic")
			u.git("tag", "-a", "-m", "v1", "v1")
			u.push("main", "topic", "--tags")
			srv := newHTTPServer(t, u, "")
			g.URL = srv.url()
			s := newSource(t, g)
			if rev, _ := poll(t, s); rev.SHA != sha {
				t.Fatalf("first poll = %s, want %s", rev.SHA, sha)
			}
			u.run(u.bare, "update-ref", "-d", map[string]string{"branch": "refs/heads/topic", "tag": "refs/tags/v1"}[name])
			e := pollErr(t, s, KindRefNotFound)
			if !strings.Contains(e.Error(), "does not exist on the server") {
				t.Errorf("error = %v, want it to say the ref does not exist", e)
			}
			if !strings.HasPrefix(e.Hint, previousInForce+";") {
				t.Errorf("hint = %q, want it to say the previous revision stays in force", e.Hint)
			}
			if last, ok := s.Last(); !ok || last.SHA != sha {
				t.Errorf("Last() = %s %v after the failed poll, want %s kept", last.SHA, ok, sha)
			}
		})
	}
}

// TestPollEmptyRepository checks the first poll of a repository nothing
// was pushed to says so, whether it fetches by name (a branch) or lists
// first (a semver range).
func TestPollEmptyRepository(t *testing.T) {
	u := newUpstream(t)
	srv := newHTTPServer(t, u, "")
	for name, g := range map[string]Spec{"branch": {Branch: "main"}, "semver": {Semver: ">=1.0.0"}} {
		t.Run(name, func(t *testing.T) {
			g.URL = srv.url()
			s := newSource(t, g)
			e := pollErr(t, s, KindRefNotFound)
			if !strings.Contains(e.Hint, "push something to the repository") {
				t.Errorf("hint = %q, want it to say to push something", e.Hint)
			}
		})
	}
}
