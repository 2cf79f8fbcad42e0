package main

import (
	"fmt"
	"testing"

	"syncd.dev/syncd/internal/reconcile"
)

// TestRunKeepsRenders: `syncd run` (as a process) keeps the render of an
// app's Git tree in its cache directory, and when a poll finds the same
// tree again (an empty commit) it applies the new revision from the kept
// answer: the kept file is read in place (the same file, used again), not
// rendered and written anew, and no second answer appears.
func TestRunKeepsRenders(t *testing.T) {
	ns, sysNS := env.Namespace(t), env.Namespace(t)
	repo, cfgPath := sourceConfigEvery(t, ns, "1s")
	first, err := repo.Commit("first", map[string][]byte{
		"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: seed\ndata:\n  color: blue\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
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
	kept := keptRender(t, cache)

	empty, err := repo.Commit("empty", nil)
	if err != nil {
		t.Fatal(err)
	}
	applied(empty)
	kept.readInPlace(t)
	if n := len(keptRenders(t, cache)); n != 1 {
		t.Errorf("%d renders kept after an empty commit, want the one", n)
	}
}
