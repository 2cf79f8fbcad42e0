package source

import (
	"context"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
)

// TestDescends: the ancestry of two revisions as a daemon asks for it after
// a poll — from a cache that followed the branch, from a fresh depth-1
// cache (a restart: it deepens once), and after a force-push (the cache
// was reset to depth 1 and the old head is in no history of the new one).
func TestDescends(t *testing.T) {
	u := newUpstream(t)
	c1 := u.commit("c1", map[string]string{"f": "1"})
	c2 := u.commit("c2", map[string]string{"f": "2"})
	u.push("HEAD:main")
	srv := newHTTPServer(t, u, "")
	followed := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	poll(t, followed)
	c3 := u.commit("c3", map[string]string{"f": "3"})
	u.push("HEAD:main")
	poll(t, followed)
	restarted := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	poll(t, restarted) // depth 1: c3 alone

	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	ask := func(s *Source, newSHA, oldSHA string) string {
		t.Helper()
		a, err := s.Descends(ctx, newSHA, oldSHA)
		if err != nil {
			return "error: " + err.Error()
		}
		return string(a)
	}
	got := map[string]string{
		"followed c3 from c2":  ask(followed, c3, c2),
		"followed c3 from c1":  ask(followed, c3, c1),
		"restarted c3 from c1": ask(restarted, c3, c1),
		"same revision":        ask(restarted, c3, c3),
	}

	// Force-push main back to c1 and on to a sibling of c2.
	u.forcePush(c1)
	x := u.commit("x", map[string]string{"f": "x"})
	u.push("-f", "HEAD:main")
	if rev, res := poll(t, followed); rev.SHA != x || res.Moved != Rewritten {
		t.Fatalf("poll after force-push = %s %v, want %s Rewritten", rev.SHA, res.Moved, x)
	}
	got["rewound x from c3"] = ask(followed, x, c3)
	got["rewound x from c1"] = ask(followed, x, c1)
	got["older c1 from c3"] = ask(restarted, c1, c3)

	want := map[string]string{
		"followed c3 from c2":  "descends",
		"followed c3 from c1":  "descends",
		"restarted c3 from c1": "descends",
		"same revision":        "descends",
		"rewound x from c3":    "diverged",
		"rewound x from c1":    "descends",
		"older c1 from c3":     "diverged",
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("ancestry (-want +got):\n%s", diff)
	}
}
