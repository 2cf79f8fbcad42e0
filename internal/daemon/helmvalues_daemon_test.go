package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/gitserver"
	"syncd.dev/syncd/internal/testenv/helmserver"
)

// colorChart renders a ConfigMap named after the release holding the
// values' color and the chart's version; its package ships
// values-production.yaml.
func colorChart(version string) helmserver.Chart {
	return helmserver.Chart{Name: "color", Version: version, Files: map[string]string{
		"values.yaml":            "color: default\n",
		"values-production.yaml": "color: packaged\n",
		"templates/cm.yaml":      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}\ndata:\n  color: {{ .Values.color | quote }}\n  version: {{ .Chart.Version | quote }}\n",
	}}
}

// TestDaemonHelmValuesFiles: syncd run renders a repository chart with a
// values file of its package, and another with values files from a Git
// valuesSource; a commit to the values repository alone re-applies the
// chart on that source's next poll, and so does a chart version alone;
// the status revision names both revisions; a values file that is not
// YAML fails naming the file and line and changes nothing; an app whose
// values source never resolves is never applied and says which source to
// check.
func TestDaemonHelmValuesFiles(t *testing.T) {
	ns := env.Namespace(t)
	charts := helmserver.Start()
	t.Cleanup(charts.Close)
	if _, err := charts.Publish(colorChart("1.0.0")); err != nil {
		t.Fatal(err)
	}
	git := gitserver.StartTest(t)
	values := git.NewTestRepo(t, "values")
	sha1, err := values.Commit("blue", map[string][]byte{"apps/fromgit/values.yaml": []byte("color: blue\n")})
	if err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  helm: {url: %s, interval: 1h}
- name: values
  git: {url: %s, branch: main, interval: 1s}
- name: gone
  git: {url: %s/gone.git, branch: main, interval: 1h}
apps:
- name: packaged
  source: charts
  namespace: %s
  helm: {chart: color, version: "^1.0", valuesFiles: [values-production.yaml]}
- name: fromgit
  source: charts
  namespace: %s
  helm: {chart: color, version: "^1.0", valuesSource: values, valuesFiles: [apps/fromgit/values.yaml]}
- name: novalues
  source: charts
  namespace: %s
  helm: {chart: color, version: "^1.0", valuesSource: gone, valuesFiles: [apps/novalues/values.yaml]}
`, charts.URL, values.URL, git.URL, ns, ns, ns)
	d := launchConfig(t, cfg, daemon.Options{MaxBackoff: time.Second})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	data := func(name string) string {
		cm, err := cms.Get(context.Background(), name, metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return cm.Data["color"] + " " + cm.Data["version"]
	}
	state := func(app string) (string, daemon.AppStatus) {
		s := appStatus(d, app)
		return fmt.Sprintf("%s: %s status=%+v", app, data(app), s), s
	}
	applied := func(app, want, valuesSHA string) func() (bool, string) {
		return func() (bool, string) {
			desc, s := state(app)
			return data(app) == want && s.Result == reconcile.ResultOK && strings.HasSuffix(s.Revision, "+values@"+valuesSHA), desc
		}
	}

	reconciletest.Eventually(t, "the packaged values file applied", func() (bool, string) {
		desc, s := state("packaged")
		return data("packaged") == "packaged 1.0.0" && s.Result == reconcile.ResultOK && !strings.Contains(s.Revision, "+values@"), desc
	})
	reconciletest.Eventually(t, "the values source's file applied, its commit in the revision", applied("fromgit", "blue 1.0.0", sha1))

	sha2, err := values.Commit("green", map[string][]byte{"apps/fromgit/values.yaml": []byte("color: green\n")})
	if err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "a values commit alone re-applied", applied("fromgit", "green 1.0.0", sha2))

	if _, err := charts.Publish(colorChart("1.1.0")); err != nil {
		t.Fatal(err)
	}
	if err := d.Trigger("charts"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "a chart version alone re-applied", applied("fromgit", "green 1.1.0", sha2))

	sha3, err := values.Commit("broken", map[string][]byte{"apps/fromgit/values.yaml": []byte("color: red\n\nsecret: hunter2\n  - : [\n")})
	if err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the broken values file fails, naming the file and line", func() (bool, string) {
		desc, s := state("fromgit")
		return s.Result == reconcile.ResultFailed && strings.Contains(s.Revision, sha3) &&
			strings.Contains(s.Error, "apps/fromgit/values.yaml") && strings.Contains(s.Error, "in source values") && strings.Contains(s.Error, "line 4"), desc
	})
	if got := data("fromgit"); got != "green 1.1.0" {
		t.Errorf("after the broken values file, fromgit = %q, want green 1.1.0 (nothing applied)", got)
	}
	if desc, s := state("fromgit"); strings.Contains(s.Error, "hunter2") {
		t.Errorf("the error shows the values file's content: %s", desc)
	}

	reconciletest.Eventually(t, "an app whose values source never resolved fails, naming it", func() (bool, string) {
		desc, s := state("novalues")
		return s.Result == reconcile.ResultFailed && strings.Contains(s.Error, `app novalues: helm.valuesSource "gone" has not resolved a revision yet`), desc
	})
	if _, err := cms.Get(context.Background(), "novalues", metav1.GetOptions{}); err == nil {
		t.Errorf("the app whose values source never resolved was applied")
	}
}
