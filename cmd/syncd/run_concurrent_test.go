package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/reconcile"
)

// TestRunConcurrentApps: `syncd run --concurrent-apps 1` (as a process)
// reconciles four apps polled together one after the other, and every
// one of them: its log never shows an app applying before the one before
// it ended.
func TestRunConcurrentApps(t *testing.T) {
	ns, sysNS := env.Namespace(t), env.Namespace(t)
	repo := servedRepo(t, "apps")
	names := []string{"a", "b", "c", "d"}
	files := map[string][]byte{}
	var apps strings.Builder
	for _, app := range names {
		var docs []string
		for i := range 10 {
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s-%02d\ndata:\n  color: blue\n", app, i))
		}
		files[app+"/cms.yaml"] = []byte(strings.Join(docs, "---\n"))
		fmt.Fprintf(&apps, "- name: %s\n  source: repo\n  path: %s\n  namespace: %s\n", app, app, ns)
	}
	if _, err := repo.Commit("apps", files); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(
		"apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git:\n    url: %s\n    branch: main\n    interval: 1h\napps:\n%s", repo.URL, apps.String())}), "syncd.yaml")
	p := startSyncd(t, "run", "--config", cfgPath, "--kubeconfig", env.Kubeconfig,
		"--inventory-namespace", sysNS, "--leader-elect-namespace", sysNS,
		"--listen", "127.0.0.1:0", "--cache-dir", t.TempDir(), "--log-format", "json", "--concurrent-apps", "1")
	poll(t, "every app applied", func() (bool, string) {
		addr, ok := p.listenAddr()
		if !ok {
			return false, "not serving yet"
		}
		st, err := getStatus(addr)
		if err != nil || len(st.Apps) != len(names) {
			return false, fmt.Sprintf("status %+v, %v", st, err)
		}
		for _, a := range st.Apps {
			if a.Result != reconcile.ResultOK {
				return false, fmt.Sprintf("app %s: result %s, error %s", a.App, a.Result, a.Error)
			}
		}
		return true, ""
	})
	if most := mostReconcilingAtOnce(t, p.stderr); most != 1 {
		t.Errorf("%d apps reconciled at once with --concurrent-apps 1, want 1", most)
	}
}

// mostReconcilingAtOnce reads syncd run's JSON log at path and returns
// the most apps between their "applying" line and the line saying how
// their reconcile ended.
func mostReconcilingAtOnce(t *testing.T, path string) int {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	now, most := 0, 0
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		var line struct {
			Msg string `json:"msg"`
		}
		if json.Unmarshal(sc.Bytes(), &line) != nil {
			continue
		}
		switch line.Msg {
		case "applying":
			now++
			most = max(most, now)
		case "reconciled", "reconcile failed":
			now--
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return most
}
