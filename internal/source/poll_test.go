package source

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
)

func minute() time.Duration { return time.Minute }

// newSource builds a Source named "src" with a fresh cache directory.
func newSource(t testing.TB, g Spec) *Source {
	t.Helper()
	if g.Interval == 0 && g.Schedule == "" {
		g.Interval = minute()
	}
	s, err := New(withName(g, "src"), Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatalf("New: %v", err)
	}
	return s
}

func poll(t testing.TB, s *Source) (Revision, Result) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	rev, res, err := s.Poll(ctx)
	if err != nil {
		t.Fatalf("Poll: %v", err)
	}
	return rev, res
}

// pollErr polls expecting an *Error of kind.
func pollErr(t testing.TB, s *Source, kind Kind) *Error {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	_, _, err := s.Poll(ctx)
	var e *Error
	if !errors.As(err, &e) {
		t.Fatalf("Poll error = %v, want *Error of kind %s", err, kind)
	}
	if e.Kind != kind {
		t.Fatalf("Poll error kind = %s, want %s (%v)", e.Kind, kind, err)
	}
	t.Logf("poll error: %v", e)
	return e
}

func readTree(t testing.TB, dir string) map[string]string {
	t.Helper()
	out := map[string]string{}
	err := filepath.Walk(dir, func(p string, fi os.FileInfo, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(dir, p)
		switch {
		case fi.Mode()&os.ModeSymlink != 0:
			target, err := os.Readlink(p)
			if err != nil {
				return err
			}
			out[rel] = "-> " + target
		case fi.Mode().IsRegular():
			b, err := os.ReadFile(p)
			if err != nil {
				return err
			}
			prefix := ""
			if fi.Mode()&0o111 != 0 {
				prefix = "(x) "
			}
			out[rel] = prefix + string(b)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}

func TestPollFirstCloneThenNoChangeIsOneRefListing(t *testing.T) {
	u := newUpstream(t)
	if err := os.Symlink("app/deploy.yaml", filepath.Join(u.work, "link.yaml")); err != nil {
		t.Fatal(err)
	}
	writeFile(t, filepath.Join(u.work, "run.sh"), "#!/bin/sh\n")
	if err := os.Chmod(filepath.Join(u.work, "run.sh"), 0o755); err != nil {
		t.Fatal(err)
	}
	sha := u.commit("Add app\n\nbody text", map[string]string{"app/deploy.yaml": "kind: Deployment\n"})
	u.push("main")
	srv := newHTTPServer(t, u, "")

	s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	rev, res := poll(t, s)
	if res.Moved != Updated {
		t.Errorf("first poll change = %v, want Updated", res.Moved)
	}
	want := Revision{
		Source: "src", URL: srv.url(), Ref: "branch main", SHA: sha,
		Author: "Ann Author <ann@example.com>", Subject: "Add app",
		Dir: filepath.Join(s.dir, "trees", sha), Tree: strings.TrimSpace(u.git("rev-parse", sha+"^{tree}")),
	}
	if diff := cmp.Diff(want, rev, cmpopts.IgnoreFields(Revision{}, "CommitTime")); diff != "" {
		t.Errorf("revision (-want +got):\n%s", diff)
	}
	if rev.CommitTime.IsZero() {
		t.Error("CommitTime is zero")
	}
	wantTree := map[string]string{
		"app/deploy.yaml": "kind: Deployment\n",
		"link.yaml":       "-> app/deploy.yaml",
		"run.sh":          "(x) #!/bin/sh\n",
	}
	if diff := cmp.Diff(wantTree, readTree(t, rev.Dir)); diff != "" {
		t.Errorf("tree (-want +got):\n%s", diff)
	}
	// The first poll of a branch fetches it by name: the fetch's own ref
	// advertisement is the only listing.
	if refs, posts, _ := srv.counts(); refs != 1 || posts != 1 {
		t.Errorf("first poll made %d info/refs GETs and %d upload-pack POSTs, want 1 and 1", refs, posts)
	}
	if diff := cmp.Diff([]string{sha}, cacheShallow(t, s)); diff != "" {
		t.Errorf("after the first branch poll the cache is not shallow at the tip (-want +got):\n%s", diff)
	}

	rev2, res2 := poll(t, s)
	if res2.Moved != Unchanged || rev2.SHA != sha || res2.Previous != sha {
		t.Errorf("second poll = %v %s (previous %s), want Unchanged %s", res2.Moved, rev2.SHA, res2.Previous, sha)
	}
	if refs, posts, _ := srv.counts(); refs != 1 || posts != 0 {
		t.Errorf("no-change poll made %d info/refs GETs and %d upload-pack POSTs, want 1 and 0", refs, posts)
	}
	if last, ok := s.Last(); !ok || last.SHA != sha {
		t.Errorf("Last() = %v %v, want %s", last.SHA, ok, sha)
	}
}

func TestPollFetchesIncrementallyAndKeepsHeldTrees(t *testing.T) {
	u := newUpstream(t)
	files := map[string]string{}
	for i := 0; i < 300; i++ {
		files[filepath.Join("manifests", strings.Repeat("d", i%7+1), "f"+itoa(i)+".yaml")] = randomText(4096, int64(i))
	}
	first := u.commit("many files", files)
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	rev1, _ := poll(t, s)
	release1, err := s.Hold(rev1)
	if err != nil {
		t.Fatal(err)
	}
	_, _, fullBytes := srv.counts()

	second := u.commit("one change", map[string]string{"manifests/d/f0.yaml": "changed\n"})
	u.push("main")
	rev2, res := poll(t, s)
	refs, posts, incBytes := srv.counts()
	if res.Moved != Updated || rev2.SHA != second || res.Previous != first {
		t.Fatalf("poll = %v %s (prev %s), want Updated %s (prev %s)", res.Moved, rev2.SHA, res.Previous, second, first)
	}
	if posts != 1 || refs != 2 {
		t.Errorf("update poll made %d info/refs and %d upload-pack requests, want 2 and 1", refs, posts)
	}
	if incBytes*20 > fullBytes {
		t.Errorf("incremental fetch transferred %d bytes, full clone %d: want < 1/20", incBytes, fullBytes)
	}
	t.Logf("full clone %d bytes, incremental %d bytes", fullBytes, incBytes)
	if got := readTree(t, rev2.Dir)["manifests/d/f0.yaml"]; got != "changed\n" {
		t.Errorf("new tree has %q", got)
	}
	if !isDir(rev1.Dir) {
		t.Error("previous tree was deleted while held; want it kept")
	}
	// Unchanged files are hard links into the previous tree; changed ones
	// are new files and the previous tree keeps its content.
	same := func(rel string) bool {
		a, err1 := os.Stat(filepath.Join(rev1.Dir, rel))
		b, err2 := os.Stat(filepath.Join(rev2.Dir, rel))
		return err1 == nil && err2 == nil && os.SameFile(a, b)
	}
	if !same("manifests/dd/f1.yaml") {
		t.Error("unchanged file was copied, want a hard link to the previous tree")
	}
	if same("manifests/d/f0.yaml") || readTree(t, rev1.Dir)["manifests/d/f0.yaml"] == "changed\n" {
		t.Error("changed file is shared with the previous tree")
	}

	release1()
	if isDir(rev1.Dir) {
		t.Error("previous tree still exists after its last hold was released; want it deleted")
	}
	if !isDir(rev2.Dir) {
		t.Error("the tree in force was deleted")
	}

	third := u.commit("again", map[string]string{"manifests/d/f0.yaml": "again\n"})
	u.push("main")
	rev3, _ := poll(t, s)
	if rev3.SHA != third {
		t.Fatalf("third poll SHA %s, want %s", rev3.SHA, third)
	}
	if isDir(rev2.Dir) || !isDir(rev3.Dir) {
		t.Errorf("after a poll without holds: previous tree exists %v, tree in force exists %v; want false, true", isDir(rev2.Dir), isDir(rev3.Dir))
	}
	if _, err := s.Hold(rev2); err == nil {
		t.Error("Hold of a deleted tree succeeded; want an error")
	}
}

func itoa(i int) string {
	return strings.TrimSpace(strings.Replace(time.Duration(i).String(), "ns", "", 1))
}

// randomText returns n bytes of deterministic incompressible-ish text.
func randomText(n int, seed int64) string {
	const alphabet = "abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789"
	b := make([]byte, n)
	x := uint64(seed)*6364136223846793005 + 1442695040888963407
	for i := range b {
		x ^= x << 13
		x ^= x >> 7
		x ^= x << 17
		b[i] = alphabet[x%uint64(len(alphabet))]
	}
	return string(b)
}

func gitSource(url, branch string) Spec {
	return Spec{URL: url, Branch: branch, Interval: minute()}
}

// withName returns g named name.
func withName(g Spec, name string) Spec {
	g.Name = name
	return g
}
