package source

import (
	"context"
	"encoding/base64"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5/plumbing/transport"
	"github.com/google/go-cmp/cmp"
)

func TestPollFollowsForcePushAsRewrite(t *testing.T) {
	u := newUpstream(t)
	u.commit("base", map[string]string{"a": "v1"})
	old := u.commit("to be amended", map[string]string{"a": "v2", "b": "x"})
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	poll(t, s)

	// Several fast-forward commits at once are an update, not a rewrite.
	u.commit("ff 1", map[string]string{"c": "1"})
	u.commit("ff 2", map[string]string{"c": "2"})
	ff := u.commit("ff 3", map[string]string{"c": "3"})
	u.push("main")
	rev, res := poll(t, s)
	if rev.SHA != ff || res.Moved != Updated || res.Previous != old {
		t.Fatalf("fast-forward poll = %s %v (prev %s), want %s Updated (prev %s)", rev.SHA, res.Moved, res.Previous, ff, old)
	}

	// Rewrite to a commit whose tree reuses a blob ("a": "v1") that only
	// older history holds.
	u.git("reset", "-q", "--hard", "HEAD~4")
	rewritten := u.commit("rewritten", map[string]string{"d": "new"})
	u.git("push", "-q", "-f", "origin", "main")
	rev, res = poll(t, s)
	if rev.SHA != rewritten || res.Moved != Rewritten || res.Previous != ff {
		t.Fatalf("force-push poll = %s %v (prev %s), want %s Rewritten (prev %s)", rev.SHA, res.Moved, res.Previous, rewritten, ff)
	}
	if got := readTree(t, rev.Dir); got["a"] != "v1" || got["d"] != "new" || got["c"] != "" {
		t.Errorf("rewritten tree = %v, want a=v1 d=new and no c", got)
	}
	if res.CacheRecovered != nil {
		t.Errorf("a rewrite reported cache corruption: %v", res.CacheRecovered)
	}

	// And a normal update after the rewrite is an update again.
	next := u.commit("after", map[string]string{"e": "1"})
	u.push("main")
	rev, res = poll(t, s)
	if rev.SHA != next || res.Moved != Updated {
		t.Errorf("poll after rewrite = %s %v, want %s Updated", rev.SHA, res.Moved, next)
	}
}

func TestPollMergeOfOldBranchFetchesMissingObjects(t *testing.T) {
	u := newUpstream(t)
	u.commit("base", map[string]string{"a": "base"})
	u.git("branch", "feature")
	u.commit("main 1", map[string]string{"a": "main"})
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	prev, _ := poll(t, s)

	// feature forks from base and keeps a blob only base has.
	u.git("checkout", "-q", "feature")
	u.commit("feature", map[string]string{"f": "feature"})
	u.git("checkout", "-q", "main")
	u.git("merge", "-q", "--no-edit", "-s", "recursive", "-X", "theirs", "feature")
	u.git("checkout", "-q", "feature", "--", ".")
	merged := u.commit("take base's a back", nil)
	u.push("main")
	rev, res := poll(t, s)
	if rev.SHA != merged || res.Moved != Updated || res.Previous != prev.SHA {
		t.Fatalf("poll = %s %v, want %s Updated", rev.SHA, res.Moved, merged)
	}
	if got := readTree(t, rev.Dir); got["a"] != "base" || got["f"] != "feature" {
		t.Errorf("tree = %v, want a=base f=feature", got)
	}
}

func TestPollDeletedBranchKeepsLastRevision(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", nil)
	u.git("branch", "release")
	u.push("main", "release")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "release"})
	rev, _ := poll(t, s)

	u.run(u.bare, "update-ref", "-d", "refs/heads/release")
	e := pollErr(t, s, KindRefNotFound)
	if !strings.Contains(e.Error(), `branch "release"`) {
		t.Errorf("error %q does not name the branch", e)
	}
	last, ok := s.Last()
	if !ok || last.SHA != rev.SHA || !isDir(last.Dir) {
		t.Errorf("after deletion Last() = %v %v (dir exists %v), want %s with its tree", last.SHA, ok, isDir(last.Dir), rev.SHA)
	}
}

func TestPollDeletedTagKeepsLastRevision(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", map[string]string{"f": "1"})
	u.git("tag", "-a", "-m", "release", "v1.0.0")
	u.push("main", "--tags")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Tag: "v1.0.0"})
	rev, _ := poll(t, s)
	tree := readTree(t, rev.Dir)

	u.run(u.bare, "tag", "-d", "v1.0.0")
	e := pollErr(t, s, KindRefNotFound)
	if !strings.Contains(e.Error(), `tag "v1.0.0"`) {
		t.Errorf("error %q does not name the tag", e)
	}
	last, ok := s.Last()
	if !ok || last != rev {
		t.Errorf("after deletion Last() = %+v %v, want %+v", last, ok, rev)
	}
	if diff := cmp.Diff(tree, readTree(t, last.Dir)); diff != "" {
		t.Errorf("tree of the last good revision changed after the tag was deleted (-want +got):\n%s", diff)
	}
}

func TestPollServerDown(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", map[string]string{"f": "1"})
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	rev, _ := poll(t, s)

	u.commit("two", map[string]string{"f": "2"})
	u.push("main")
	srv.hangup.Store(true)
	pollErr(t, s, KindUnreachable)
	if last, _ := s.Last(); last.SHA != rev.SHA || !isDir(last.Dir) {
		t.Errorf("after hang-up Last() = %s, want %s with its tree", last.SHA, rev.SHA)
	}

	// The cache survived the broken fetch: the next poll works.
	srv.hangup.Store(false)
	if got, res := poll(t, s); res.Moved != Updated || res.CacheRecovered != nil || got.SHA == rev.SHA {
		t.Errorf("poll after hang-up = %s %v (recovered %v)", got.SHA, res.Moved, res.CacheRecovered)
	}

	srv.Close()
	pollErr(t, s, KindUnreachable)
}

// TestPollServerDiesMidPack: the server sends half of the pack and closes
// the connection. The poll fails as Unreachable, the revision in force and
// its tree are untouched, and once the server is healthy the next poll
// continues from the cache without reporting it corrupt.
func TestPollServerDiesMidPack(t *testing.T) {
	tests := map[string]struct {
		// firstGood: a poll succeeds before the server starts cutting.
		firstGood bool
	}{
		"first clone":       {firstGood: false},
		"incremental fetch": {firstGood: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := newUpstream(t)
			files := map[string]string{}
			for i := 0; i < 20; i++ {
				files["m/f"+itoa(i)] = randomText(2048, int64(i))
			}
			u.commit("one", files)
			u.push("main")
			srv := newHTTPServer(t, u, "")
			s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
			var prev Revision
			var prevTree map[string]string
			if tc.firstGood {
				prev, _ = poll(t, s)
				prevTree = readTree(t, prev.Dir)
			}

			objectsBefore := objectFiles(t, s)
			want := u.commit("two", map[string]string{"m/f0": randomText(4096, 99), "m/new": randomText(4096, 100)})
			u.push("main")
			srv.cutPack.Store(true)
			pollErr(t, s, KindUnreachable)
			if diff := cmp.Diff(objectsBefore, objectFiles(t, s)); diff != "" {
				t.Errorf("the cut fetch left files in the cache's objects (-before +after):\n%s", diff)
			}
			cuts := srv.takeCuts()
			if len(cuts) != 1 || cuts[0].packAt < 0 || cuts[0].sent <= cuts[0].packAt+12 || cuts[0].sent >= cuts[0].full {
				t.Fatalf("cut responses = %+v, want one cut inside the pack data", cuts)
			}
			last, ok := s.Last()
			if ok != tc.firstGood || last != prev {
				t.Errorf("after the cut Last() = %+v %v, want %+v %v", last, ok, prev, tc.firstGood)
			}
			if tc.firstGood {
				if diff := cmp.Diff(prevTree, readTree(t, prev.Dir)); diff != "" {
					t.Errorf("tree of the revision in force changed (-want +got):\n%s", diff)
				}
			}

			srv.cutPack.Store(false)
			rev, res := poll(t, s)
			if rev.SHA != want || res.Moved != Updated || res.CacheRecovered != nil {
				t.Errorf("poll with the server healthy = %s %v (recovered: %v), want %s Updated and no recovery", rev.SHA, res.Moved, res.CacheRecovered, want)
			}
			if got := readTree(t, rev.Dir); got["m/new"] != randomText(4096, 100) || got["m/f1"] != files["m/f1"] {
				t.Error("tree after the healthy poll lacks the new or the unchanged files")
			}
		})
	}
}

// objectFiles lists the files under the cache's objects directory.
func objectFiles(t testing.TB, s *Source) []string {
	t.Helper()
	var out []string
	root := filepath.Join(s.repoDir(), "objects")
	err := filepath.Walk(root, func(p string, fi os.FileInfo, err error) error {
		if os.IsNotExist(err) {
			return nil
		}
		if err != nil {
			return err
		}
		if !fi.IsDir() {
			rel, _ := filepath.Rel(root, p)
			out = append(out, rel)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPollWrongTokenIsAuthErrorWithoutTheToken(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", nil)
	u.push("main")
	const good, bad = "s3cr3t-good-token", "s3cr3t-BAD-token"
	srv := newHTTPServer(t, u, good)
	tokenFile := writeFile(t, filepath.Join(t.TempDir(), "token"), bad+"\n")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main", Auth: &Auth{TokenFile: tokenFile}})

	e := pollErr(t, s, KindAuth)
	for _, secret := range []string{good, bad} {
		if strings.Contains(e.Error(), secret) {
			t.Errorf("error %q contains a token", e)
		}
	}
	if !errors.Is(e, e.Err) {
		t.Error("Error does not unwrap")
	}

	// Rotated secrets are picked up on the next poll.
	writeFile(t, tokenFile, good)
	rev, _ := poll(t, s)
	if strings.Contains(rev.URL, good) {
		t.Errorf("revision URL %q contains the token", rev.URL)
	}

	if err := os.Remove(tokenFile); err != nil {
		t.Fatal(err)
	}
	u.commit("two", nil)
	u.push("main")
	e = pollErr(t, s, KindAuth)
	if !strings.Contains(e.Error(), "tokenFile") {
		t.Errorf("missing token file error %q does not name git.auth.tokenFile", e)
	}
}

func TestPollAuthErrorHidesTokenEchoedByServer(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", nil)
	u.push("main")
	const token = "s3cr3t-echoed-token"
	srv := newHTTPServer(t, u, token)
	srv.echoAuth.Store(true)
	tokenFile := writeFile(t, filepath.Join(t.TempDir(), "token"), token+"\n")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main", Auth: &Auth{TokenFile: tokenFile}})

	e := pollErr(t, s, KindAuth)
	msg := e.Error()
	basic := base64.StdEncoding.EncodeToString([]byte("git:" + token))
	for _, secret := range []string{token, basic} {
		if strings.Contains(msg, secret) {
			t.Errorf("error %q contains the credential %q", msg, secret)
		}
	}
	// The server's reason is kept, with the secrets redacted, on one line.
	if !strings.Contains(msg, "password: <redacted>") || !strings.Contains(msg, "Basic <redacted>") || strings.Contains(msg, "\n") {
		t.Errorf("error %q: want the echoed reason on one line with both credentials redacted", msg)
	}
	if !errors.Is(e, transport.ErrAuthenticationRequired) {
		t.Errorf("error %q does not unwrap to transport.ErrAuthenticationRequired", msg)
	}
}

func TestPollRecoversCorruptCache(t *testing.T) {
	eachObjectFile := func(fn func(p string, size int64) error) func(repo string) error {
		return func(repo string) error {
			return filepath.Walk(filepath.Join(repo, "objects"), func(p string, fi os.FileInfo, err error) error {
				if err != nil || fi.IsDir() {
					return err
				}
				if err := os.Chmod(p, 0o644); err != nil {
					return err
				}
				return fn(p, fi.Size())
			})
		}
	}
	tests := map[string]struct {
		corrupt func(repo string) error
		// Without any objects the fetch simply asks for everything: no
		// corruption is seen, the result is still right.
		wantRecovered bool
	}{
		"garbage objects": {eachObjectFile(func(p string, _ int64) error { return os.WriteFile(p, []byte("garbage"), 0o644) }), true},
		"truncated packs": {eachObjectFile(func(p string, size int64) error { return os.Truncate(p, size/2) }), true},
		"broken config": {func(repo string) error {
			return os.WriteFile(filepath.Join(repo, "config"), []byte("[remote \"origin"), 0o644)
		}, true},
		"objects deleted": {func(repo string) error { return os.RemoveAll(filepath.Join(repo, "objects")) }, false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := newUpstream(t)
			u.commit("one", map[string]string{"f": "1"})
			u.push("main")
			srv := newHTTPServer(t, u, "")
			s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
			rev1, _ := poll(t, s)
			// A reader holds the old tree: recovery must not take it away.
			release, err := s.Hold(rev1)
			if err != nil {
				t.Fatal(err)
			}
			defer release()

			if err := tc.corrupt(filepath.Join(s.dir, "repo")); err != nil {
				t.Fatal(err)
			}
			want := u.commit("two", map[string]string{"f": "2"})
			u.push("main")
			rev2, res := poll(t, s)
			if rev2.SHA != want || readTree(t, rev2.Dir)["f"] != "2" {
				t.Fatalf("poll after corruption = %s, want %s with f=2", rev2.SHA, want)
			}
			var e *Error
			if got := errors.As(res.CacheRecovered, &e) && e.Kind == KindCorruptCache; got != tc.wantRecovered {
				t.Errorf("Result.CacheRecovered = %v, want a %s error: %v", res.CacheRecovered, KindCorruptCache, tc.wantRecovered)
			}
			if !isDir(rev1.Dir) {
				t.Error("the previous tree, held by a reader, was removed during recovery")
			}
		})
	}
}

func TestPollMissingRepositoryAndCanceledContext(t *testing.T) {
	u := newUpstream(t)
	u.commit("one", nil)
	u.push("main")
	srv := newHTTPServer(t, u, "")

	s := newSource(t, Spec{URL: srv.URL + "/missing.git", Branch: "main"})
	pollErr(t, s, KindRepositoryNotFound)

	s = newSource(t, Spec{URL: srv.url(), Branch: "main"})
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	_, _, err := s.Poll(ctx)
	var e *Error
	if !errors.As(err, &e) || e.Kind != KindCanceled {
		t.Errorf("Poll with a canceled context = %v, want kind %s", err, KindCanceled)
	}
}
