package daemon_test

import (
	"fmt"
	"log/slog"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestDaemonRenderWarnings: an app whose kustomizations use deprecated
// fields (bases, commonLabels, as many public installs do) reports them
// as its warnings, naming each file: in /status, and in the log once
// however many times the app syncs.
func TestDaemonRenderWarnings(t *testing.T) {
	ns := env.Namespace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "old-style")
	if _, err := repo.Commit("old style", map[string][]byte{
		"base/kustomization.yaml":    []byte("commonLabels: {app: web}\nresources: [cm.yaml]\n"),
		"base/cm.yaml":               []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\n"),
		"overlay/kustomization.yaml": []byte("bases: [../base]\n"),
	}); err != nil {
		t.Fatal(err)
	}
	var logs syncBuffer
	d := launchConfig(t, fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: %s, branch: main, interval: 1h}
apps:
- name: web
  source: repo
  path: overlay
  namespace: %s
`, repo.URL, ns), daemon.Options{Logger: slog.New(slog.NewTextHandler(&logs, nil))})
	want := []string{
		"overlay/kustomization.yaml: 'bases' is deprecated. Please use 'resources' instead. Run 'kustomize edit fix' to update your Kustomization automatically.",
		"base/kustomization.yaml: 'commonLabels' is deprecated. Please use 'labels' instead. Run 'kustomize edit fix' to update your Kustomization automatically.",
	}
	reconciletest.Eventually(t, "web synced with its warnings", func() (bool, string) {
		s := appStatus(d, "web")
		return s.Result == "ok" && len(s.Warnings) == len(want), fmt.Sprintf("%+v", s)
	})
	for i, w := range want {
		if got := appStatus(d, "web").Warnings[i]; got != w {
			t.Errorf("status warning %d = %q, want %q", i, got, w)
		}
	}
	for range 2 {
		runs := appStatus(d, "web").LastRun
		if err := d.Trigger("repo"); err != nil {
			t.Fatal(err)
		}
		reconciletest.Eventually(t, "web synced again", func() (bool, string) {
			s := appStatus(d, "web")
			return s.LastRun.After(runs), fmt.Sprintf("%+v", s)
		})
	}
	for _, w := range want {
		if n := strings.Count(logs.String(), "render warning: "+w); n != 1 {
			t.Errorf("the log has %q %d times over three syncs, want once\n%s", w, n, logs.String())
		}
	}
}
