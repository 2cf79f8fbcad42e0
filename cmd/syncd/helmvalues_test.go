package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/testenv/gitserver"
	"syncd.dev/syncd/internal/testenv/helmserver"
)

// valuesSourceConfig writes a syncd.yaml whose app web renders chart shop
// of the Helm repository at chartsURL with values files from the Git
// repository at valuesURL (helm.valuesSource).
func valuesSourceConfig(t *testing.T, chartsURL, valuesURL, ns string) string {
	t.Helper()
	return filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  helm: {url: %s, interval: 1m}
- name: values
  git: {url: %s, branch: main, interval: 1m}
apps:
- name: web
  source: charts
  namespace: %s
  pruneBudget: 100
  helm:
    chart: shop
    version: "~0.1"
    releaseName: shop
    valuesSource: values
    valuesFiles: [envs/prod/values.yaml]
`, chartsURL, valuesURL, ns)}), "syncd.yaml")
}

// prodValues is the values file of the values repository, the password
// of the chart's Secret in it.
func prodValues(greeting string) map[string][]byte {
	return map[string][]byte{"envs/prod/values.yaml": []byte("greeting: " + greeting + "\npassword: " + helmSecret + "\n")}
}

// TestHelmValuesFromGitSource: a chart of a Helm repository with its
// values file in a Git repository (helm.valuesSource) applies (the
// inventory records <chart revision>+values@<commit>), re-applies as a
// no-op and shows no drift; syncd plan shows a values commit and a
// pull-request checkout (--path) as a diff of the chart's ConfigMap; a
// values file that is not YAML, or is missing, fails naming the file (and
// line) and the values source, applying nothing; the Secret's value,
// which comes from the values file, never shows.
func TestHelmValuesFromGitSource(t *testing.T) {
	charts := helmserver.Start()
	t.Cleanup(charts.Close)
	if _, err := charts.Publish(repoChart("0.1.0")); err != nil {
		t.Fatal(err)
	}
	values := gitserver.StartTest(t).NewTestRepo(t, "values")
	sha, err := values.Commit("prod values", prodValues("from-git"))
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	tr := newTranscript(t, valuesSourceConfig(t, charts.URL, values.URL, ns))
	greeting := func() string {
		cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "shop-config", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return cm.Data["greeting"]
	}

	r := tr.run("apply", exitOK, "apply")
	if !strings.Contains(r.stdout, "Secret "+ns+"/shop-pw created") || greeting() != "from-git" {
		t.Fatalf("apply: greeting %q, want from-git, and the Secret created:\n%s", greeting(), r.stdout)
	}
	parent, err := env.Clientset(t).CoreV1().Secrets(invNamespace(t)).Get(context.Background(), inventory.ParentPrefix+"web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if rev := parent.Annotations[inventory.AnnotationRevision]; !strings.HasSuffix(rev, "+values@"+sha) {
		t.Errorf("the inventory records revision %q, want <chart revision>+values@%s", rev, sha)
	}
	r = tr.run("re-apply", exitOK, "apply")
	if strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "configured") {
		t.Errorf("re-apply of the same chart and values wrote something:\n%s", r.stdout)
	}
	tr.run("drift", exitOK, "drift")

	sha2, err := values.Commit("new greeting", prodValues("changed-in-git"))
	if err != nil {
		t.Fatal(err)
	}
	r = tr.run("plan of a values commit", exitChanges, "plan", "--app", "web")
	for _, want := range []string{"shop-config", "changed-in-git", "from-git"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan of a values commit does not show %q:\n%s", want, r.stdout)
		}
	}
	if label := "revision shop-0.1.0@sha256:"; !strings.Contains(r.stdout, label) || !strings.Contains(r.stdout, "+values@"+sha2[:12]+"\n") {
		t.Errorf("plan does not name the chart and the values commit %s (%s...+values@<commit>):\n%s", sha2[:12], label, r.stdout)
	}

	// A pull request of the values repository: its checkout is --path.
	pr := filepath.Join(values.Work, "envs/prod/values.yaml")
	if err := os.WriteFile(pr, []byte("greeting: from-pr\npassword: "+helmSecret+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	r = tr.run("plan of a checkout", exitChanges, "plan", "--app", "web", "--path", values.Work)
	if !strings.Contains(r.stdout, "from-pr") || !strings.Contains(r.stdout, "shop-config") {
		t.Errorf("plan --path of a values checkout does not show the greeting from-pr:\n%s", r.stdout)
	}

	// Undo the pull request's edit once: the cases below commit over it,
	// and after "missing" the tree holds no file for a checkout to restore.
	if _, err := values.Git("checkout", "--", "."); err != nil {
		t.Fatal(err)
	}
	bad := []struct {
		name  string
		files map[string][]byte
		want  []string
	}{
		{"not YAML", map[string][]byte{"envs/prod/values.yaml": []byte("greeting: x\n\npassword: " + helmSecret + "\n  - : [\n")}, []string{"envs/prod/values.yaml", "helm.valuesFiles[0] in source values", "line 4", "chart shop@~0.1 of source charts"}},
		{"missing", map[string][]byte{"envs/prod/values.yaml": nil}, []string{"envs/prod/values.yaml", "helm.valuesFiles[0] in source values", "no such file"}},
	}
	for _, tc := range bad {
		name := tc.name
		if _, err := values.Commit(name, tc.files); err != nil {
			t.Fatal(err)
		}
		r := tr.output("apply, values "+name, "apply")
		if r.code == exitOK {
			t.Errorf("apply with a values file %s succeeded:\n%s", name, r.stdout)
		}
		for _, w := range tc.want {
			if !strings.Contains(r.stdout+r.stderr, w) {
				t.Errorf("apply with a values file %s: output does not mention %q:\n%s%s", name, w, r.stdout, r.stderr)
			}
		}
		if got := greeting(); got != "from-git" {
			t.Errorf("apply with a values file %s: greeting %q, want from-git (nothing applied)", name, got)
		}
	}
	tr.neverShows(helmSecret)
}

// TestOCIHelmValuesFromPackage: a chart of a Helm repository source at an
// oci:// URL reads helm.valuesFiles from its package (the chart pushed
// with a values-production.yaml beside values.yaml), and one the package
// lacks fails naming the chart and the file, applying nothing.
func TestOCIHelmValuesFromPackage(t *testing.T) {
	reg := startOCIRegistry(t)
	chart := map[string]string{"values-production.yaml": "greeting: from-package\n"}
	for n, b := range flatten(testChartFiles("x")) {
		if rest, ok := strings.CutPrefix(n, "app/"); ok {
			chart[rest] = b
		}
	}
	if _, err := reg.PushChart("charts/shop", "shop", "0.1.0", chart); err != nil {
		t.Fatal(err)
	}
	for name, tc := range map[string]struct {
		file string
		code int
		want string
	}{
		"in the package": {"values-production.yaml", exitOK, "ConfigMap %s/shop-config created"},
		"not in it":      {"values-staging.yaml", exitError, "values-staging.yaml: helm.valuesFiles[0] in chart shop"},
	} {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			cfg := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  helm: {url: %s, interval: 1m}
apps:
- name: web
  source: charts
  namespace: %s
  helm: {chart: shop, releaseName: shop, valuesFiles: [%s]}
`, "oci://"+reg.Host+"/charts", ns, tc.file)}), "syncd.yaml")
			r := syncd(t, "apply", "--config", cfg, "--cache-dir", t.TempDir())
			if want := strings.ReplaceAll(tc.want, "%s", ns); r.code != tc.code || !strings.Contains(r.stdout+r.stderr, want) {
				t.Fatalf("apply: code %d, want %d and %q:\n%s%s", r.code, tc.code, want, r.stdout, r.stderr)
			}
			cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "shop-config", metav1.GetOptions{})
			switch {
			case tc.code == exitOK && (err != nil || cm.Data["greeting"] != "from-package"):
				t.Errorf("shop-config = %v (get: %v), want the package's values-production.yaml greeting", cm.Data, err)
			case tc.code != exitOK && err == nil:
				t.Errorf("shop-config was applied though the values file is missing")
			}
		})
	}
}
