package main

import (
	"bytes"
	"context"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/go-git/go-git/v5"
	"github.com/google/go-cmp/cmp"
)

// writeRenderFixture writes a config with a file:// source and an https
// source, and a repository directory holding one Deployment.
func writeRenderFixture(t *testing.T) (cfgPath, repo string) {
	t.Helper()
	dir := t.TempDir()
	repo = filepath.Join(dir, "repo")
	if err := os.MkdirAll(filepath.Join(repo, "deploy"), 0o755); err != nil {
		t.Fatal(err)
	}
	deploy := `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "example.com/web:1"}]
`
	if err := os.WriteFile(filepath.Join(repo, "deploy", "web.yaml"), []byte(deploy), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := `apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: local
  git: {url: "file://` + repo + `", branch: main, interval: 1m}
- name: remote
  git: {url: "https://git.example.com/web.git", branch: main, interval: 1m}
apps:
- name: web
  source: local
  path: deploy
  namespace: default
  split:
  - manager: syncd-web-release
    paths: [".spec.template.spec.containers[*].image"]
- name: far
  source: remote
  namespace: default
`
	cfgPath = filepath.Join(dir, "syncd.yaml")
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return cfgPath, repo
}

func runCmd(t *testing.T, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestRenderYAML(t *testing.T) {
	cfg, _ := writeRenderFixture(t)
	code, out, stderr := runCmd(t, "render", "--config", cfg, "--app", "web")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	want := `---
# manager: syncd-web  object: apps/Deployment default/web
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  selector:
    matchLabels:
      app: web
  template:
    metadata:
      labels:
        app: web
    spec:
      containers:
      - name: app
---
# manager: syncd-web-release  object: apps/Deployment default/web
apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: default
spec:
  template:
    spec:
      containers:
      - image: example.com/web:1
        name: app
`
	if diff := cmp.Diff(want, out); diff != "" {
		t.Errorf("render output (-want +got):\n%s", diff)
	}
}

func TestRenderJSON(t *testing.T) {
	cfg, repo := writeRenderFixture(t)
	code, out, stderr := runCmd(t, "render", "--config", cfg, "--app", "far", "--path", filepath.Join(repo, "deploy"), "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var doc struct {
		App    string `json:"app"`
		Slices []struct {
			Manager            string         `json:"manager"`
			Object             string         `json:"object"`
			Stage              string         `json:"stage"`
			Hash               string         `json:"hash"`
			Fields             map[string]any `json:"fields"`
			ApplyConfiguration map[string]any `json:"applyConfiguration"`
		} `json:"slices"`
	}
	if err := json.Unmarshal([]byte(out), &doc); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if doc.App != "far" || len(doc.Slices) != 1 {
		t.Fatalf("want one slice of app far, got %+v", doc)
	}
	s := doc.Slices[0]
	if s.Manager != "syncd-far" || s.Object != "apps/Deployment default/web" || s.Stage != "namespaced" || len(s.Hash) != 64 || s.Fields["f:spec"] == nil {
		t.Errorf("slice = %+v", s)
	}
}

func TestRenderErrors(t *testing.T) {
	cfg, repo := writeRenderFixture(t)
	bad := filepath.Join(t.TempDir(), "bad")
	if err := os.MkdirAll(bad, 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(bad, "x.yaml"), []byte("apiVersion: v1\nmetadata: {name: x}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	bare := filepath.Join(t.TempDir(), "web.git")
	if _, err := git.PlainInit(bare, true); err != nil {
		t.Fatal(err)
	}
	bareCfg := filepath.Join(t.TempDir(), "syncd.yaml")
	if err := os.WriteFile(bareCfg, []byte("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- {name: bare, git: {url: \"file://"+bare+"\", branch: main, interval: 1m}}\napps:\n- {name: web, source: bare, path: deploy, namespace: default}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	insideCfg := filepath.Join(t.TempDir(), "syncd.yaml")
	if err := os.WriteFile(insideCfg, []byte("apiVersion: syncd/v1alpha1\nkind: Config\nsources:\n- {name: bare, git: {url: \"file://"+bare+"/deploy\", branch: main, interval: 1m}}\napps:\n- {name: web, source: bare, path: base, namespace: default}\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	tests := map[string]struct {
		args []string
		want string
	}{
		"path in a bare repository":            {[]string{"render", "--config", cfg, "--app", "web", "--path", filepath.Join(bare, "deploy")}, "--path " + filepath.Join(bare, "deploy") + " is in the bare repository " + bare + ", whose files are in its Git objects, not on disk, so there is no directory to render: clone it (git clone " + bare + " DIR) and pass --path DIR/deploy"},
		"path a bare repository":               {[]string{"render", "--config", cfg, "--app", "web", "--path", bare}, "--path " + bare + " is the bare repository " + bare + ", whose files are in its Git objects, not on disk, so there is no directory to render: clone it (git clone " + bare + " DIR) and pass --path DIR"},
		"path a file URL in a bare repository": {[]string{"render", "--config", cfg, "--app", "web", "--path", "file://" + bare + "/deploy"}, "clone it (git clone " + bare + " DIR) and pass --path DIR/deploy"},
		"source URL in a bare repository":      {[]string{"render", "--config", insideCfg, "--app", "web"}, "source bare reads " + filepath.Join(bare, "deploy", "base") + ", inside the bare repository " + bare + ", whose files are in its Git objects, not on disk: clone it (git clone " + bare + " DIR) and pass --path DIR/deploy/base; to fetch it (syncd plan, apply), set the source's url to file://" + bare + " and the app's path to deploy/base"},
		"bare repository":                      {[]string{"render", "--config", bareCfg, "--app", "web"}, "source bare is the bare repository " + bare + ", which has no working tree to render: pass --path DIR with a checkout of it (git clone " + bare + " DIR, then --path DIR/deploy)"},
		"no config":                            {[]string{"render", "--app", "web"}, "--config is required"},
		"no app":                               {[]string{"render", "--config", cfg}, "--app is required"},
		"unknown app":                          {[]string{"render", "--config", cfg, "--app", "nope"}, `no app named "nope"`},
		"bad output":                           {[]string{"render", "--config", cfg, "--app", "web", "-o", "xml"}, `-o "xml": use yaml or json`},
		"remote source":                        {[]string{"render", "--config", cfg, "--app", "far"}, "not a local file:// repository: pass --path DIR"},
		"invalid manifest":                     {[]string{"render", "--config", cfg, "--app", "web", "--path", bad}, "x.yaml: document 1 (v1 x): kind is missing"},
		"missing dir":                          {[]string{"render", "--config", cfg, "--app", "web", "--path", filepath.Join(repo, "nope")}, "nope"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			code, out, stderr := runCmd(t, tc.args...)
			if code != exitError {
				t.Errorf("exit %d, want %d", code, exitError)
			}
			if out != "" {
				t.Errorf("printed on stdout despite the error:\n%s", out)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Errorf("stderr does not mention %q:\n%s", tc.want, stderr)
			}
		})
	}
}

// TestRenderRedactsSensitive: fields an app marks sensitive are printed as
// <redacted> in both output formats, including inside a list item picked
// by its key, and nothing else is hidden.
func TestRenderRedactsSensitive(t *testing.T) {
	cfg, repo := writeRenderFixture(t)
	env := `apiVersion: apps/v1
kind: Deployment
metadata: {name: api}
spec:
  selector: {matchLabels: {app: api}}
  template:
    metadata: {labels: {app: api}}
    spec:
      containers:
      - name: app
        image: example.com/api:1
        env:
        - {name: DB_PASSWORD, value: hunter2-secret-value}
`
	if err := os.WriteFile(filepath.Join(repo, "deploy", "api.yaml"), []byte(env), 0o644); err != nil {
		t.Fatal(err)
	}
	config, err := os.ReadFile(cfg)
	if err != nil {
		t.Fatal(err)
	}
	withRule := strings.Replace(string(config), "- name: far\n", `  sensitive:
  - kinds: [apps/Deployment]
    paths: [".spec.template.spec.containers[*].env"]
- name: far
`, 1)
	if err := os.WriteFile(cfg, []byte(withRule), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"yaml", "json"} {
		code, out, stderr := runCmd(t, "render", "--config", cfg, "--app", "web", "-o", format)
		if code != 0 {
			t.Fatalf("-o %s: exit %d: %s", format, code, stderr)
		}
		// The variable's name stays in the field set (-o json's fields),
		// as Secret keys do; its value never appears.
		if strings.Contains(out, "hunter2") {
			t.Errorf("-o %s printed the sensitive env:\n%s", format, out)
		}
		if !strings.Contains(out, "<redacted>") {
			t.Errorf("-o %s: no <redacted> marker:\n%s", format, out)
		}
		if !strings.Contains(out, "example.com/api:1") {
			t.Errorf("-o %s hid more than the sensitive field (the image is gone):\n%s", format, out)
		}
	}
}

// TestBareRepositoryAt finds the bare repository a directory is, or is
// inside, whether the directory exists or not; a working tree, and a
// directory in none, is no bare repository.
func TestBareRepositoryAt(t *testing.T) {
	bare := filepath.Join(t.TempDir(), "web.git")
	if _, err := git.PlainInit(bare, true); err != nil {
		t.Fatal(err)
	}
	checkout := filepath.Join(t.TempDir(), "web")
	if _, err := git.PlainInit(checkout, false); err != nil {
		t.Fatal(err)
	}
	type found struct {
		Repo, Rel string
		OK        bool
	}
	for name, tc := range map[string]struct {
		dir  string
		want found
	}{
		"the repository":         {dir: bare, want: found{bare, ".", true}},
		"a path inside it":       {dir: filepath.Join(bare, "deploy", "base"), want: found{bare, "deploy/base", true}},
		"a directory inside it":  {dir: filepath.Join(bare, "refs"), want: found{bare, "refs", true}},
		"a working tree":         {dir: checkout, want: found{}},
		"a path in working tree": {dir: filepath.Join(checkout, "deploy"), want: found{}},
		"no repository":          {dir: t.TempDir(), want: found{}},
	} {
		t.Run(name, func(t *testing.T) {
			var got found
			got.Repo, got.Rel, got.OK = bareRepositoryAt(tc.dir)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("bareRepositoryAt(%s) (-want +got):\n%s", tc.dir, diff)
			}
		})
	}
}
