package e2e

import (
	"fmt"
	"strings"
	"testing"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// shopRepo is a kustomize repository in the shape demo apps and platform
// repositories use: a base, a reusable component, and a production
// overlay that sets the namespace, patches replicas and pins the image.
func shopRepo(image string) map[string][]byte {
	return map[string][]byte{
		"apps/shop/base/kustomization.yaml": []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
resources: [deployment.yaml, service.yaml]
labels:
  - pairs: {app.kubernetes.io/name: shop}
    includeSelectors: true
configMapGenerator:
  - name: shop-settings
    literals: [LOG_LEVEL=info]
`),
		"apps/shop/base/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: shop}
spec:
  replicas: 1
  template:
    spec:
      containers:
        - name: shop
          image: ghcr.io/example/shop:latest
          envFrom: [{configMapRef: {name: shop-settings}}]
          ports: [{name: http, containerPort: 8080}]
`),
		"apps/shop/base/service.yaml": []byte(`apiVersion: v1
kind: Service
metadata: {name: shop}
spec:
  ports: [{name: http, port: 80, targetPort: http}]
`),
		"apps/shop/components/metrics/kustomization.yaml": []byte(`apiVersion: kustomize.config.k8s.io/v1alpha1
kind: Component
patches:
  - target: {kind: Deployment, name: shop}
    patch: |
      - op: add
        path: /spec/template/metadata/annotations
        value: {prometheus.io/scrape: "true", prometheus.io/port: "8080"}
`),
		"apps/shop/overlays/prod/kustomization.yaml": []byte(fmt.Sprintf(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: shop-prod
resources: [namespace.yaml, ../../base]
components: [../../components/metrics]
images:
  - name: ghcr.io/example/shop
    newTag: %q
patches:
  - target: {kind: Deployment, name: shop}
    patch: |
      - op: replace
        path: /spec/replicas
        value: 3
`, image)),
		"apps/shop/overlays/prod/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: shop-prod}\n"),
	}
}

// TestJourneyGitKustomizeOverlay: a private Git repository over HTTP
// (basic auth with a token file), a kustomize overlay with a component;
// a new image tag pushed is planned and applied.
func TestJourneyGitKustomizeOverlay(t *testing.T) {
	w := newWorkspace(t)
	const token = "ghp-e2e-Zq8wK3vN7yR2tB6m"
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "shop")
	if _, err := repo.Commit("shop 1.0.0", shopRepo("1.0.0")); err != nil {
		t.Fatal(err)
	}
	srv.RequireBasic("git", token)
	tokenFile := w.file("git-token", token+"\n")
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: shop
    git:
      url: %s
      branch: main
      interval: 1m
      auth: {tokenFile: %s}
apps:
  - name: shop
    source: shop
    path: apps/shop/overlays/prod
    namespace: shop-prod
`, repo.URL, tokenFile))

	cl := newCluster(t)
	j := &journey{
		w: w, app: "shop",
		render:   []string{"--path", repo.Work + "/apps/shop/overlays/prod"},
		rendered: []string{"name: shop-settings-", "ghcr.io/example/shop:1.0.0", "prometheus.io/scrape"},
		secrets:  []string{token},
		change: func() func(*testing.T) {
			if _, err := repo.Commit("shop 1.1.0", shopRepo("1.1.0")); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				d, err := cl.get(objectRef{group: "apps", kind: "Deployment", namespace: "shop-prod", name: "shop"})
				if err != nil {
					t.Fatal(err)
				}
				if got := fmt.Sprint(d.Object["spec"].(map[string]any)["template"]); !strings.Contains(got, "ghcr.io/example/shop:1.1.0") {
					t.Errorf("Deployment shop-prod/shop after the change: %s, want image 1.1.0", got)
				}
			}
		},
	}
	j.run(t)
}
