package main

import (
	"context"
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv/helmserver"
)

// repoChart is the test chart of helm_test.go (testChartFiles) as a chart
// of a Helm repository at version, its ConfigMap labelled with the
// version so a version bump shows in a diff.
func repoChart(version string) helmserver.Chart {
	files := map[string]string{}
	for name, data := range testChartFiles("x") {
		rel, ok := strings.CutPrefix(name, "app/")
		if !ok || rel == "Chart.yaml" {
			continue
		}
		files[rel] = string(data)
	}
	files["templates/config.yaml"] = strings.Replace(files["templates/config.yaml"], "  name: {{ .Release.Name }}-config\n", "  name: {{ .Release.Name }}-config\n  labels: {chart-version: {{ .Chart.Version | quote }}}\n", 1)
	return helmserver.Chart{Name: "shop", Version: version, Files: files}
}

// helmRepoConfig writes a syncd.yaml whose app web renders chart (at
// version) of the Helm repository at url into ns, with the password
// inline.
func helmRepoConfig(t *testing.T, url, ns, chart, version string) string {
	t.Helper()
	return filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  helm: {url: %s, interval: 1m}
apps:
- name: web
  source: charts
  namespace: %s
  pruneBudget: 100
  helm:
    chart: %s
    version: %q
    releaseName: shop
    values: {password: %s, greeting: from-repo}
`, url, ns, chart, version, helmSecret)}), "syncd.yaml")
}

func requestPaths(srv *helmserver.Server) []string {
	var out []string
	for _, r := range srv.Requests() {
		out = append(out, r.Path)
	}
	return out
}

// TestHelmChartFromRepository: a chart of a loopback Helm repository
// renders, applies, re-applies as a no-op (its archive from the cache:
// the re-apply reads index.yaml only), reports no drift, then reports a
// hand edit as drift and as a conflict on the next apply, shows a
// published version bump in syncd plan, and never prints the Secret's
// value.
func TestHelmChartFromRepository(t *testing.T) {
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	if _, err := srv.Publish(repoChart("0.1.0")); err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	cfg := helmRepoConfig(t, srv.URL, ns, "shop", "~0.1")
	tr := newTranscript(t, cfg)

	r := tr.run("apply", exitOK, "apply")
	for _, want := range []string{"ConfigMap " + ns + "/shop-config created", "Secret " + ns + "/shop-pw created", "apps/Deployment " + ns + "/shop created", "ConfigMap " + ns + "/migrate created"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r.stdout)
		}
	}
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "shop-config", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "from-repo" || cm.Labels["chart-version"] != "0.1.0" {
		t.Fatalf("shop-config = %v %v (get: %v), want greeting from-repo, chart-version 0.1.0", cm.Data, cm.Labels, err)
	}

	srv.ResetRequests()
	r = tr.run("re-apply", exitOK, "apply")
	if strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "configured") {
		t.Errorf("re-apply of the same chart wrote something:\n%s", r.stdout)
	}
	if got := requestPaths(srv); !slices.Equal(got, []string{"/index.yaml"}) {
		t.Errorf("re-apply requested %v, want index.yaml only (the archive is cached by digest)", got)
	}
	tr.run("drift", exitOK, "drift")

	// Someone edits the chart's ConfigMap: syncd drift reports it,
	// naming the object, and the Secret's value is never shown.
	cm.Data["greeting"] = "edited-by-hand"
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Update(context.Background(), cm, metav1.UpdateOptions{FieldManager: "kubectl-edit"}); err != nil {
		t.Fatal(err)
	}
	r = tr.output("drift after an edit", "drift")
	if r.code != exitChanges || !strings.Contains(r.stdout, "shop-config") {
		t.Errorf("drift after an edit: code %d, want %d naming shop-config:\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	// The hand edit took the field (an Update): the chart's apply meets
	// a conflict, as for any app, and never forces it.
	r = tr.output("apply after an edit", "apply")
	if r.code != exitConflict || !strings.Contains(r.stdout, `.data.greeting is owned by "kubectl-edit"`) {
		t.Errorf("apply after an edit: code %d, want %d with the conflict named:\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}

	if _, err := srv.Publish(repoChart("0.1.1")); err != nil {
		t.Fatal(err)
	}
	r = tr.output("plan", "plan", "--app", "web")
	if !strings.Contains(r.stdout, "0.1.1") || !strings.Contains(r.stdout, "0.1.0") || !strings.Contains(r.stdout, "shop-config") {
		t.Errorf("plan does not show the version bump (code %d):\n%s%s", r.code, r.stdout, r.stderr)
	}

	tr.neverShows(helmSecret)
}

// TestHelmRepositoryRefused: a missing chart, a bad version range, no
// matching version and an unreachable repository each fail with an error
// naming the chart or the source, and apply nothing.
func TestHelmRepositoryRefused(t *testing.T) {
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	if _, err := srv.Publish(repoChart("0.1.0")); err != nil {
		t.Fatal(err)
	}
	down := helmserver.Start()
	downURL := down.URL
	down.Close()
	tests := map[string]struct {
		url, chart, version string
		want                []string
	}{
		"missing chart":       {srv.URL, "nope", "", []string{`chart "nope"`, `source "charts"`}},
		"bad version range":   {srv.URL, "shop", "0.1.x.y", []string{"apps[0].helm.version", "chart shop", "not a version or semver range"}},
		"no matching version": {srv.URL, "shop", ">=1.0.0", []string{`chart "shop"`, ">=1.0.0", "0.1.0"}},
		"unreachable":         {downURL, "shop", "", []string{`source "charts"`, "Unreachable"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			cfg := helmRepoConfig(t, tc.url, ns, tc.chart, tc.version)
			r := syncd(t, "apply", "--config", cfg, "--cache-dir", t.TempDir())
			if r.code == exitOK {
				t.Fatalf("apply succeeded:\n%s", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("output does not mention %q:\n%s%s", w, r.stdout, r.stderr)
				}
			}
			list, err := env.Clientset(t).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cm := range list.Items {
				if cm.Name != "kube-root-ca.crt" {
					t.Errorf("ConfigMap %s was applied", cm.Name)
				}
			}
		})
	}
}
