package main

import (
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestRunKeepsRenders: `syncd run` (as a process) keeps the render of an
// app's Git tree in its cache directory, and when a poll finds the same
// tree again (an empty commit) it applies the new revision from the kept
// answer: the kept file is read in place (the same file, used again), not
// rendered and written anew, and no second answer appears.
func TestRunKeepsRenders(t *testing.T) {
	ns, sysNS := env.Namespace(t), env.Namespace(t)
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := srv.NewRepo("app", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	first, err := repo.Commit("first", map[string][]byte{
		"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  color: blue\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: %s
    branch: main
    interval: 1s
apps:
- name: web
  source: repo
  path: app
  namespace: %s
`, repo.URL, ns)}), "syncd.yaml")
	cache := t.TempDir()
	p := startSyncd(t, "run", "--config", cfgPath, "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", sysNS, "--leader-elect-namespace", sysNS,
		"--listen", "127.0.0.1:0", "--cache-dir", cache, "--log-format", "json")
	applied := func(rev string) {
		t.Helper()
		poll(t, "app web applied at "+rev, func() (bool, string) {
			addr, ok := p.listenAddr()
			if !ok {
				return false, "not serving yet"
			}
			st, err := getStatus(addr)
			if err != nil || len(st.Apps) != 1 {
				return false, fmt.Sprintf("status %+v, %v", st, err)
			}
			a := st.Apps[0]
			return a.Revision == rev && a.Result == reconcile.ResultOK, fmt.Sprintf("revision %s, result %s, error %s", a.Revision, a.Result, a.Error)
		})
	}
	applied(first)
	kept := keptRenders(t, cache)
	if len(kept) != 1 {
		t.Fatalf("%d renders kept after the first sync, want 1: %v", len(kept), kept)
	}
	file := filepath.Join(cache, "_renders", kept[0])
	before, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	long := time.Now().Add(-time.Hour)
	if err := os.Chtimes(file, long, long); err != nil {
		t.Fatal(err)
	}

	empty, err := repo.Commit("empty", nil)
	if err != nil {
		t.Fatal(err)
	}
	applied(empty)
	after, err := os.Stat(file)
	if err != nil {
		t.Fatal(err)
	}
	if !os.SameFile(before, after) || !after.ModTime().After(long) {
		t.Errorf("the kept render was not read in place for the same tree (same file %v, used %v)", os.SameFile(before, after), after.ModTime())
	}
	if n := len(keptRenders(t, cache)); n != 1 {
		t.Errorf("%d renders kept after an empty commit, want the one", n)
	}
}
