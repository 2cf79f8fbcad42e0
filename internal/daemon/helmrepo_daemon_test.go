package daemon_test

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/helmserver"
)

func settingsChart(version string) helmserver.Chart {
	return helmserver.Chart{Name: "settings", Version: version, Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  version: {{ .Chart.Version | quote }}\n",
	}}
}

// TestDaemonHelmRepositoryNewVersion: the daemon applies the chart
// version a Helm repository source resolves; a version published in
// index.yaml is applied on the next scheduled poll; polls of a repository
// that did not move are answered 304 and no archive is downloaded twice.
func TestDaemonHelmRepositoryNewVersion(t *testing.T) {
	ns := env.Namespace(t)
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	if _, err := srv.Publish(settingsChart("1.0.0")); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: charts
  helm: {url: %s, interval: 1s}
apps:
- name: settings
  source: charts
  namespace: %s
  helm: {chart: settings, version: "^1.0"}
`, srv.URL, ns)
	d := launchConfig(t, cfg, daemon.Options{})
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	version := func() string {
		cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return cm.Data["version"]
	}
	status := func() daemon.AppStatus { return appStatus(d, "settings") }
	reconciletest.Eventually(t, "1.0.0 applied", func() (bool, string) {
		return version() == "1.0.0" && status().Result == "ok", fmt.Sprintf("version=%s status=%+v", version(), status())
	})
	reconciletest.Eventually(t, "an unchanged poll answered 304", func() (bool, string) {
		reqs := srv.Requests()
		last := reqs[len(reqs)-1]
		return last.Path == "/index.yaml" && last.Status == 304, fmt.Sprintf("requests=%+v", reqs)
	})

	if _, err := srv.Publish(settingsChart("1.1.0")); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "1.1.0 applied on the next poll", func() (bool, string) {
		return version() == "1.1.0" && status().Result == "ok", fmt.Sprintf("version=%s status=%+v", version(), status())
	})
	downloads := map[string]int{}
	for _, r := range srv.Requests() {
		if strings.HasSuffix(r.Path, ".tgz") {
			downloads[r.Path]++
		}
	}
	for path, n := range downloads {
		if n != 1 {
			t.Errorf("%s downloaded %d times, want once", path, n)
		}
	}
	if len(downloads) != 2 {
		t.Errorf("archives downloaded: %v, want 1.0.0's and 1.1.0's", downloads)
	}
}
