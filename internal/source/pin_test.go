package source

import (
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestHoldKeepsTreeUntilLastRelease holds the first revision's tree, moves
// the branch on twice, then releases the holds one by one: the tree exists
// exactly while a hold is left, and the tree in force always exists.
func TestHoldKeepsTreeUntilLastRelease(t *testing.T) {
	tests := map[string]struct {
		holds int
		// releases are indexes into the holds, in order; a repeated index
		// releases the same hold again (a no-op).
		releases []int
		// wantKept is whether the old tree exists after each release.
		wantKept []bool
	}{
		"one app":                  {holds: 1, releases: []int{0}, wantKept: []bool{false}},
		"two apps":                 {holds: 2, releases: []int{1, 0}, wantKept: []bool{true, false}},
		"released twice":           {holds: 2, releases: []int{0, 0, 1}, wantKept: []bool{true, true, false}},
		"three apps, in any order": {holds: 3, releases: []int{2, 0, 1}, wantKept: []bool{true, true, false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := newUpstream(t)
			u.commit("one", map[string]string{"f": "1"})
			u.push("main")
			srv := newHTTPServer(t, u, "")
			s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
			old, _ := poll(t, s)
			var releases []func()
			for range tc.holds {
				release, err := s.Hold(old)
				if err != nil {
					t.Fatal(err)
				}
				releases = append(releases, release)
			}
			u.commit("two", map[string]string{"f": "2"})
			u.push("main")
			poll(t, s)
			u.commit("three", map[string]string{"f": "3"})
			u.push("main")
			cur, _ := poll(t, s)
			if got := readTree(t, old.Dir)["f"]; got != "1" {
				t.Fatalf("held tree after two newer revisions has f=%q, want 1", got)
			}
			var kept []bool
			for _, i := range tc.releases {
				releases[i]()
				kept = append(kept, isDir(old.Dir))
			}
			if diff := cmp.Diff(tc.wantKept, kept); diff != "" {
				t.Errorf("old tree kept after each release (-want +got):\n%s", diff)
			}
			if !isDir(cur.Dir) {
				t.Error("the tree in force was deleted")
			}
			if names := treeNames(t, s); len(names) != 1 {
				t.Errorf("trees/ holds %v after every hold was released, want only the tree in force", names)
			}
		})
	}
}

// TestHoldSurvivesRewindToHeldTree rewinds the branch to a revision whose
// tree is still held: the poll reuses it, and releasing the hold leaves it,
// since it is in force again.
func TestHoldSurvivesRewindToHeldTree(t *testing.T) {
	u := newUpstream(t)
	first := u.commit("one", map[string]string{"f": "1"})
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	rev1, _ := poll(t, s)
	release, err := s.Hold(rev1)
	if err != nil {
		t.Fatal(err)
	}
	u.commit("two", map[string]string{"f": "2"})
	u.push("main")
	rev2, _ := poll(t, s)
	u.forcePush(first)
	back, _ := poll(t, s)
	release()
	if back.Dir != rev1.Dir || readTree(t, back.Dir)["f"] != "1" {
		t.Errorf("after the rewind the tree in force is %s with f=%q, want %s with f=1", back.Dir, readTree(t, back.Dir)["f"], rev1.Dir)
	}
	if isDir(rev2.Dir) {
		t.Error("the tree of the dropped revision still exists; want it deleted")
	}
	if _, err := s.Hold(rev2); err == nil {
		t.Error("Hold of the dropped revision's deleted tree succeeded; want an error")
	}
}

// TestHeldTreeReadWhileRapidPushes walks a tree of a few thousand files on
// a loopback Git server; halfway through the walk the branch moves on
// several times and each new revision is polled. The walk holds the tree,
// so it reads every file of its revision with its content.
func TestHeldTreeReadWhileRapidPushes(t *testing.T) {
	const files, pushes = 3000, 4
	_, repo, s := gitServerSource(t, "big", time.Minute)
	content := map[string][]byte{}
	for i := range files {
		content[fmt.Sprintf("apps/big/d%02d/cm-%04d.yaml", i%50, i)] = fmt.Appendf(nil, "kind: ConfigMap\nmetadata:\n  name: cm-%04d\n", i)
	}
	if _, err := repo.Commit("big app", content); err != nil {
		t.Fatal(err)
	}
	rev, _ := poll(t, s)
	release, err := s.Hold(rev)
	if err != nil {
		t.Fatal(err)
	}
	defer release()

	halfway, pushed := make(chan struct{}), make(chan struct{})
	var wg sync.WaitGroup
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(pushed)
		<-halfway
		for i := range pushes {
			if _, err := repo.Commit(fmt.Sprintf("push %d", i), map[string][]byte{"apps/big/d00/cm-0000.yaml": fmt.Appendf(nil, "kind: ConfigMap\n# %d\n", i)}); err != nil {
				t.Error(err)
				return
			}
			poll(t, s)
		}
	}()
	seen := 0
	walkErr := filepath.WalkDir(filepath.Join(rev.Dir, "apps", "big"), func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() {
			return nil
		}
		if _, err := os.ReadFile(p); err != nil {
			return err
		}
		if seen++; seen == files/2 {
			close(halfway)
			<-pushed
		}
		return nil
	})
	wg.Wait()
	if walkErr != nil {
		t.Fatalf("walking the held tree: %v", walkErr)
	}
	if seen != files {
		t.Errorf("the walk of the held tree read %d files, want all %d", seen, files)
	}
	if last, _ := s.Last(); last.SHA == rev.SHA {
		t.Fatal("the pushes did not move the branch; the test proves nothing")
	}
}

func treeNames(t *testing.T, s *Source) []string {
	t.Helper()
	entries, err := os.ReadDir(s.treesDir())
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for _, e := range entries {
		out = append(out, e.Name())
	}
	return out
}
