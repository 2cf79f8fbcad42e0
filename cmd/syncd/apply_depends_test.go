package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// dependsConfig serves a repository with one directory per app and writes
// a syncd.yaml whose apps (in this order) are a (dependsOn b), b
// (dependsOn c), c, and solo, which depends on nothing. extra is added
// under apps.
func dependsConfig(t *testing.T, ns, extra string) (*gitserver.Repo, string) {
	t.Helper()
	repo := servedRepo(t, "apps")
	var apps strings.Builder
	for _, a := range [][2]string{{"a", "[b]"}, {"b", "[c]"}, {"c", "[]"}, {"solo", "[]"}} {
		fmt.Fprintf(&apps, "- name: %s\n  source: repo\n  path: %s\n  namespace: %s\n  dependsOn: %s\n", a[0], a[0], ns, a[1])
	}
	cfg := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git:
    url: %s
    branch: main
    interval: 1m
apps:
%s%s`, repo.URL, apps.String(), extra)}), "syncd.yaml")
	return repo, cfg
}

// dependsFiles is one ConfigMap per app directory, named after the app;
// broken apps' ConfigMaps go to a namespace that does not exist, so their
// apply fails.
func dependsFiles(broken ...string) map[string][]byte {
	files := map[string][]byte{}
	for _, app := range []string{"a", "b", "c", "solo"} {
		ns := ""
		for _, b := range broken {
			if b == app {
				ns = "  namespace: no-such-namespace\n"
			}
		}
		files[app+"/cm.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: " + app + "\n" + ns + "data:\n  app: " + app + "\n")
	}
	return files
}

// appOrder returns the apps in the order `syncd apply --config` reported
// applying them.
func appOrder(stdout string) []string {
	var order []string
	for _, line := range strings.Split(stdout, "\n") {
		if name, ok := strings.CutPrefix(line, "app "); ok {
			name, _, _ = strings.Cut(name, ":")
			order = append(order, name)
		}
	}
	return order
}

// TestApplyConfigDependsOn: `syncd apply --config` applies a chain written
// in the wrong order (a depends on b depends on c) as c, b, a; when c
// fails, b and a are not applied and say why, and solo still is; --app
// applies one app alone and says its dependsOn was not checked.
func TestApplyConfigDependsOn(t *testing.T) {
	ns := env.Namespace(t)
	repo, cfg := dependsConfig(t, ns, "")
	if _, err := repo.Commit("all good", dependsFiles()); err != nil {
		t.Fatal(err)
	}
	cache := t.TempDir()
	r := syncd(t, "apply", "--config", cfg, "--cache-dir", cache)
	if r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got, want := strings.Join(appOrder(r.stdout), " "), "c b a solo"; got != want {
		t.Errorf("apps applied in order %q, want %q:\n%s", got, want, r.stdout)
	}
	for _, name := range []string{"a", "b", "c", "solo"} {
		if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s: %v", name, err)
		}
	}

	// c breaks: its dependents are stopped, the independent app applies.
	if _, err := repo.Commit("c broken", dependsFiles("c")); err != nil {
		t.Fatal(err)
	}
	r = syncd(t, "apply", "--config", cfg, "--cache-dir", cache)
	t.Logf("c broken: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != exitError {
		t.Errorf("exit %d, want %d", r.code, exitError)
	}
	if got, want := strings.Join(appOrder(r.stdout), " "), "c solo"; got != want {
		t.Errorf("apps applied %q, want %q", got, want)
	}
	for _, want := range []string{
		"error: app b: not applied: it depends on c, which failed",
		"error: app a: not applied: it depends on b, which was not applied because c failed",
	} {
		if !strings.Contains(r.stderr, want) {
			t.Errorf("stderr lacks %q", want)
		}
	}

	// --app a applies a alone, and says what it did not check.
	r = syncd(t, "apply", "--config", cfg, "--cache-dir", cache, "--app", "a")
	if r.code != exitOK || !strings.Contains(r.stdout, "note: app a depends on b; --app applies it alone, without checking that they applied their current revision") {
		t.Errorf("--app a: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// TestApplyConfigDependsOnCycle: a dependency cycle is a config error
// naming every app on it, and nothing is applied.
func TestApplyConfigDependsOnCycle(t *testing.T) {
	ns := env.Namespace(t)
	repo, cfg := dependsConfig(t, ns, "- name: x\n  source: repo\n  path: a\n  dependsOn: [y]\n- name: y\n  source: repo\n  path: b\n  dependsOn: [z]\n- name: z\n  source: repo\n  path: c\n  dependsOn: [x]\n")
	if _, err := repo.Commit("all good", dependsFiles()); err != nil {
		t.Fatal(err)
	}
	r := syncd(t, "apply", "--config", cfg, "--cache-dir", t.TempDir())
	if r.code != exitError || !strings.Contains(r.stderr, "apps[6].dependsOn[0]: dependency cycle x → y → z → x") {
		t.Errorf("cycle: code %d, want %d and the cycle named\n%s%s", r.code, exitError, r.stdout, r.stderr)
	}
	if got := appOrder(r.stdout); len(got) != 0 {
		t.Errorf("a config with a cycle applied %v", got)
	}
}
