package main

import (
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
)

// writeOverlayRepo writes a repository (a directory with .git) holding a
// base, an overlay two levels below it, and a syncd config naming the
// overlay; overlay is the overlay's kustomization.
func writeOverlayRepo(t *testing.T, overlay string) (cfgPath, repo string) {
	t.Helper()
	repo = t.TempDir()
	files := map[string]string{
		".git/HEAD":                        "ref: refs/heads/main\n",
		"base/kustomization.yaml":          "resources: [settings.yaml]\n",
		"base/settings.yaml":               "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings}\ndata: {color: plain}\n",
		"overlays/prod/kustomization.yaml": overlay,
		"overlays/prod/color.env":          "shade=dark\n",
	}
	for name, content := range files {
		p := filepath.Join(repo, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	cfgPath = filepath.Join(t.TempDir(), "syncd.yaml")
	cfg := "apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- name: repo\n  git: {url: \"https://git.example.com/platform.git\", branch: main, interval: 1m}\n" +
		"apps:\n- name: web\n  source: repo\n  path: overlays/prod\n  namespace: web\n"
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath, repo
}

// TestRenderPathOverlay: syncd render --path of an overlay builds it from
// the directory's repository, so ../../base works; a remote reference in a
// generator is refused naming file and field, by render, plan and apply,
// and sends nothing.
func TestRenderPathOverlay(t *testing.T) {
	var hits atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { hits.Add(1) }))
	defer srv.Close()
	tests := map[string]struct {
		overlay  string
		wantCode int
		want     string // on stdout for exit 0, stderr otherwise
	}{
		"../../base": {
			overlay:  "resources: [../../base]\nconfigMapGenerator:\n- name: shade\n  envs: [color.env]\n",
			wantCode: exitOK,
			want:     "shade: dark",
		},
		"remote generator file": {
			overlay:  "resources: [../../base]\nconfigMapGenerator:\n- name: shade\n  files: [color.env, " + srv.URL + "/x]\n",
			wantCode: exitError,
			want:     `overlays/prod/kustomization.yaml: configMapGenerator[0].files[1]: "` + srv.URL + `/x" is a remote reference`,
		},
		"past the repository root": {
			overlay:  "resources: [../../../elsewhere]\n",
			wantCode: exitError,
			want:     `overlays/prod/kustomization.yaml: resources[0]: "../../../elsewhere" leaves the repository`,
		},
	}
	for name, tc := range tests {
		cfg, repo := writeOverlayRepo(t, tc.overlay)
		dir := filepath.Join(repo, "overlays", "prod")
		commands := map[string][]string{"render": {"render", "--config", cfg, "--app", "web", "--path", dir}}
		if tc.wantCode != exitOK { // a render that fails stops plan and apply before the cluster
			commands["plan"] = []string{"plan", "--config", cfg, "--app", "web", "--path", dir}
			commands["apply"] = []string{"apply", "--config", cfg, "--app", "web", "--path", dir}
		}
		for cmd, args := range commands {
			t.Run(name+"/"+cmd, func(t *testing.T) {
				var r result
				if cmd == "render" { // offline: takes no --kubeconfig
					r.code, r.stdout, r.stderr = runCmd(t, args...)
				} else {
					r = syncd(t, args...)
				}
				if r.code != tc.wantCode {
					t.Fatalf("exit %d, want %d\nstdout:\n%s\nstderr:\n%s", r.code, tc.wantCode, r.stdout, r.stderr)
				}
				got := r.stderr + r.stdout
				if !strings.Contains(got, tc.want) {
					t.Errorf("output does not mention %q:\n%s", tc.want, got)
				}
				// A command's own prefix may repeat --path; what the
				// render says is repository-relative.
				if strings.Contains(strings.ReplaceAll(got, dir, "DIR"), repo) {
					t.Errorf("the output names the host path %s:\n%s", repo, got)
				}
			})
		}
	}
	if n := hits.Load(); n != 0 {
		t.Errorf("the loopback server received %d request(s)", n)
	}
}
