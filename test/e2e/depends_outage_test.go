package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyDependencyReadyThroughSourceOutage: under `syncd run`, an
// app whose Git server went down after its revision was applied is not
// in sync (/status result failed, the source's error), but its dependents
// do not wait for it: the revision in force succeeded, as a Flux
// Kustomization stays Ready on its last artifact. A new commit of the
// dependent is applied while the dependency's server is still down, and
// the dependency is applied again once its server is back.
func TestJourneyDependencyReadyThroughSourceOutage(t *testing.T) {
	const ns = "depends-outage-e2e"
	w := newWorkspace(t)
	ensureNamespace(t, ns)
	base, web := gitserver.StartTest(t), gitserver.StartTest(t)
	baseRepo, webRepo := base.NewTestRepo(t, "base"), web.NewTestRepo(t, "web")
	configMap := func(name, value string) map[string][]byte {
		return map[string][]byte{"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: " + name + ", namespace: " + ns + "}\ndata: {v: \"" + value + "\"}\n")}
	}
	if _, err := baseRepo.Commit("base", configMap("base", "1")); err != nil {
		t.Fatal(err)
	}
	if _, err := webRepo.Commit("web", configMap("web", "1")); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: base
    git: {url: %s, branch: main, interval: 1s}
  - name: web
    git: {url: %s, branch: main, interval: 1s}
apps:
  - {name: outage-base, source: base, path: app}
  - {name: outage-web, source: web, path: app, dependsOn: [outage-base]}
`, baseRepo.URL, webRepo.URL))
	// The app names are the journey's own: the journeys share the
	// cluster and its inventory namespace.
	d := w.startDaemon()
	d.waitApplied("outage-base", func(rev string) bool { return rev != "" })
	d.waitApplied("outage-web", func(rev string) bool { return rev != "" })

	base.SetDown(true)
	waitFor(t, "base's source outage on /status", time.Minute, func() (bool, string) {
		apps, err := d.status()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range apps {
			if a.App == "outage-base" {
				return a.Result == "failed" && a.Error != "", fmt.Sprintf("%+v", a)
			}
		}
		return false, fmt.Sprintf("%+v", apps)
	})

	next, err := webRepo.Commit("web 2", configMap("web", "2"))
	if err != nil {
		t.Fatal(err)
	}
	d.waitApplied("outage-web", func(rev string) bool { return strings.Contains(rev, next[:12]) })
	cms := clientset(t).CoreV1().ConfigMaps(ns)
	if cm, err := cms.Get(context.Background(), "web", metav1.GetOptions{}); err != nil || cm.Data["v"] != "2" {
		t.Errorf("web's ConfigMap during base's outage: %v, %v; want v=2", cm.Data, err)
	}

	base.SetDown(false)
	fixed, err := baseRepo.Commit("base 2", configMap("base", "2"))
	if err != nil {
		t.Fatal(err)
	}
	d.waitApplied("outage-base", func(rev string) bool { return strings.Contains(rev, fixed[:12]) })
}
