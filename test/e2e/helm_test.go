package e2e

import (
	"encoding/base64"
	"fmt"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
	"syncd.dev/syncd/internal/testenv/helmserver"
	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// TestJourneyGitHelmValues: a chart in a Git repository over HTTP,
// rendered with the chart's values.yaml and its values-prod.yaml
// (helm.valuesFiles, relative to the repository root); a commit to the
// values file is planned and applied.
func TestJourneyGitHelmValues(t *testing.T) {
	const ns = "shop-helm-git" // the app's namespace and name
	w := newWorkspace(t)
	ensureNamespace(t, ns)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "platform")
	if _, err := repo.Commit("shop chart 0.1.0", gitFiles("charts/shop", shopChart("0.1.0", "1.0.0"))); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: platform
    git:
      url: %s
      branch: main
      interval: 1m
apps:
  - name: %s
    source: platform
    path: charts/shop
    namespace: %s
    helm:
      releaseName: shop
      valuesFiles: [charts/shop/values-prod.yaml]
`, repo.URL, ns, ns))

	cl := newCluster(t)
	j := &journey{
		w: w, app: ns,
		render:   []string{"--path", repo.Work + "/charts/shop"},
		rendered: []string{"replicas: 3", `LOG_LEVEL: warn`, "CHECKOUT_TIMEOUT: 30s", "ghcr.io/example/shop:1.0.0", "helm.sh/chart: shop-0.1.0", "checksum/config:"},
		change: func() func(*testing.T) {
			if _, err := repo.Commit("shop: scale out, debug logs", map[string][]byte{"charts/shop/values-prod.yaml": []byte(shopProdValues(5, "debug"))}); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				checkShop(t, cl, ns, shopLive{replicas: 5, image: "ghcr.io/example/shop:1.0.0", chartLabel: "shop-0.1.0", logLevel: "debug"})
			}
		},
	}
	j.run(t)
}

// TestJourneyHelmRepoBasicAuth: a chart of a Helm HTTP repository that
// wants basic auth (username and a password file), picked by a version
// range; render fetches it without --path; a new version published
// inside the range is planned and applied; the password is never
// printed.
func TestJourneyHelmRepoBasicAuth(t *testing.T) {
	const (
		ns       = "shop-helm-repo" // the app's namespace and name
		user     = "robot-e2e"
		password = "Vq7Xk2Lm9Rt4Zp3Wd6Hb"
	)
	w := newWorkspace(t)
	ensureNamespace(t, ns)
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	srv.RequireAuth("Basic " + basic)
	publish := func(version, appVersion string) {
		t.Helper()
		if _, err := srv.Publish(helmserver.Chart{Name: "shop", Version: version, Files: withoutChartYAML(shopChart(version, appVersion))}); err != nil {
			t.Fatal(err)
		}
	}
	publish("0.1.0", "1.0.0")
	publish("0.2.0", "2.0.0") // outside the range
	passwordFile := w.file("charts-password", password+"\n")
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: charts
    helm:
      url: %s
      interval: 10m
      auth:
        username: %s
        passwordFile: %s
apps:
  - name: %s
    source: charts
    namespace: %s
    helm:
      chart: shop
      version: "~0.1"
      releaseName: shop
      valuesFiles: [values-prod.yaml]
`, srv.URL, user, passwordFile, ns, ns))

	cl := newCluster(t)
	j := &journey{
		w: w, app: ns,
		rendered: []string{"replicas: 3", "ghcr.io/example/shop:1.0.0", "helm.sh/chart: shop-0.1.0"},
		secrets:  []string{password, basic},
		change: func() func(*testing.T) {
			publish("0.1.1", "1.1.0")
			return func(t *testing.T) {
				checkShop(t, cl, ns, shopLive{replicas: 3, image: "ghcr.io/example/shop:1.1.0", chartLabel: "shop-0.1.1", logLevel: "warn"})
			}
		},
	}
	j.run(t)
	j.daemonApplies(t, cl, "0.1.2", "1.2.0", publish)
}

// TestJourneyHelmOCI: charts helm push stored in a registry that wants
// basic auth, read as a Helm repository (sources[].helm at oci://) with
// a username and a password file; render fetches without --path; a new
// version pushed inside the range is planned and applied.
func TestJourneyHelmOCI(t *testing.T) {
	const (
		ns       = "shop-helm-oci" // the app's namespace and name
		user     = "robot-oci"
		password = "Hn3Ws8Pq5Zc1Jr7Tf2Lx"
	)
	w := newWorkspace(t)
	ensureNamespace(t, ns)
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	reg.RequireBasic(user, password)
	push := func(version, appVersion string) {
		t.Helper()
		if _, err := reg.PushChart("charts/shop", "shop", version, shopChart(version, appVersion)); err != nil {
			t.Fatal(err)
		}
	}
	push("0.1.0", "1.0.0")
	push("1.0.0", "2.0.0") // outside the range
	passwordFile := w.file("registry-password", password)
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: charts
    helm:
      url: %s
      interval: 10m
      auth:
        username: %s
        passwordFile: %s
apps:
  - name: %s
    source: charts
    namespace: %s
    helm:
      chart: shop
      version: "0.x"
      releaseName: shop
      valuesFiles: [values-prod.yaml]
`, reg.URL("charts"), user, passwordFile, ns, ns))

	cl := newCluster(t)
	j := &journey{
		w: w, app: ns,
		rendered: []string{"replicas: 3", "ghcr.io/example/shop:1.0.0", "helm.sh/chart: shop-0.1.0"},
		secrets:  []string{password, base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
		change: func() func(*testing.T) {
			push("0.3.0", "1.3.0")
			return func(t *testing.T) {
				checkShop(t, cl, ns, shopLive{replicas: 3, image: "ghcr.io/example/shop:1.3.0", chartLabel: "shop-0.3.0", logLevel: "warn"})
			}
		},
	}
	j.run(t)
	j.daemonApplies(t, cl, "0.4.0", "1.4.0", push)
}

// daemonApplies is a chart journey's last step: a version published
// after the last apply (publish), then syncd run, which polls the source
// at start and applies the newest version in range to the app's
// namespace (its name).
func (j *journey) daemonApplies(t *testing.T, cl *cluster, version, appVersion string, publish func(version, appVersion string)) {
	t.Helper()
	step := stepper(t)
	publish(version, appVersion)
	d := j.w.startDaemon()
	waitShop(t, cl, j.app, shopLive{replicas: 3, image: "ghcr.io/example/shop:" + appVersion, chartLabel: "shop-" + version, logLevel: "warn"}, d)
	d.stop()
	step("syncd run applies " + version)
	j.w.checkNoSecrets(j.secrets...)
}
