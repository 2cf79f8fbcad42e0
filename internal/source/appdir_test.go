package source

import (
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestRevisionAppDir(t *testing.T) {
	u := newUpstream(t)
	outside := t.TempDir()
	writeFile(t, filepath.Join(outside, "secret.yaml"), "kind: Secret\n")
	for link, target := range map[string]string{
		"link-out":              outside,
		"link-up":               "../../../..",
		"link-in":               "apps/web",
		"apps/leaky/stolen":     filepath.Join(outside, "secret.yaml"),
		"apps/leaky2/up":        "../../..",
		"apps/dangling/missing": "nowhere.yaml",
	} {
		p := filepath.Join(u.work, link)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
	}
	u.commit("apps", map[string]string{
		"apps/web/deploy.yaml":      "kind: Deployment\n",
		"apps/file.yaml":            "kind: ConfigMap\n",
		"apps/dangling/ok.yaml":     "kind: ConfigMap\n",
		"apps/leaky/ok.yaml":        "kind: ConfigMap\n",
		"apps/leaky2/ok.yaml":       "kind: ConfigMap\n",
		"apps/web/nested/more.yaml": "kind: Service\n",
	})
	u.push("main")
	srv := newHTTPServer(t, u, "")
	s := newSource(t, Spec{URL: srv.url(), Branch: "main"})
	rev, _ := poll(t, s)

	tests := map[string]struct {
		path       string
		wantRel    string // relative to rev.Dir
		wantReason string
	}{
		"root holds escaping links": {path: "", wantReason: "leaves the repository"},
		"dot holds escaping links":  {path: ".", wantReason: "leaves the repository"},
		"nested dir":                {path: "apps/web/nested", wantRel: "apps/web/nested"},
		"app dir":                   {path: "apps/web", wantRel: "apps/web"},
		"trailing slash":            {path: "apps/web/", wantRel: "apps/web"},
		"symlink inside the tree":   {path: "link-in", wantRel: "apps/web"},
		"dangling link is harmless": {path: "apps/dangling", wantRel: "apps/dangling"},
		"dot dot":                   {path: "../x", wantReason: `".."`},
		"dot dot in the middle":     {path: "apps/../apps/web", wantReason: `".."`},
		"absolute":                  {path: "/etc", wantReason: "relative"},
		"missing":                   {path: "apps/nope", wantReason: "does not exist"},
		"a file":                    {path: "apps/file.yaml", wantReason: "not a directory"},
		"symlink out":               {path: "link-out", wantReason: "leaves the repository"},
		"symlink up":                {path: "link-up", wantReason: "leaves the repository"},
		"file symlink out inside":   {path: "apps/leaky", wantReason: "symlink apps/leaky/stolen"},
		"dir symlink out inside":    {path: "apps/leaky2", wantReason: "symlink apps/leaky2/up"},
		".git":                      {path: ".git", wantReason: ".git"},
	}
	root, err := filepath.EvalSymlinks(rev.Dir)
	if err != nil {
		t.Fatal(err)
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got, err := rev.AppDir("web", tc.path)
			if tc.wantReason != "" {
				var pe *PathError
				if !errors.As(err, &pe) {
					t.Fatalf("AppDir(%q) = %q, %v; want a *PathError", tc.path, got, err)
				}
				if !strings.Contains(err.Error(), tc.wantReason) || !strings.Contains(err.Error(), `app "web"`) || !strings.Contains(err.Error(), `path "`+tc.path+`"`) {
					t.Errorf("error %q should name the app, the path and contain %q", err, tc.wantReason)
				}
				return
			}
			if err != nil {
				t.Fatalf("AppDir(%q): %v", tc.path, err)
			}
			if want := filepath.Join(root, tc.wantRel); got != want {
				t.Errorf("AppDir(%q) = %q, want %q", tc.path, got, want)
			}
		})
	}
}
