package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/testenv/ociregistry"
)

// storefrontArtifact is a directory of plain YAML manifests as a team
// ships it with `flux push artifact --path deploy/`: no kustomization,
// no namespace (the app's), one object per file.
func storefrontArtifact(version, theme string) map[string]string {
	return map[string]string{
		"configmap.yaml": fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata:
  name: storefront
  labels: {app.kubernetes.io/name: storefront}
data:
  THEME: %s
  RELEASE: %q
`, theme, version),
		"deployment.yaml": fmt.Sprintf(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: storefront
  labels: {app.kubernetes.io/name: storefront}
spec:
  replicas: 2
  selector:
    matchLabels: {app.kubernetes.io/name: storefront}
  template:
    metadata:
      labels: {app.kubernetes.io/name: storefront}
    spec:
      containers:
        - name: storefront
          image: ghcr.io/example/storefront:%s
          envFrom: [{configMapRef: {name: storefront}}]
          ports: [{name: http, containerPort: 8080}]
`, version),
		"service.yaml": `apiVersion: v1
kind: Service
metadata:
  name: storefront
  labels: {app.kubernetes.io/name: storefront}
spec:
  selector: {app.kubernetes.io/name: storefront}
  ports: [{name: http, port: 80, targetPort: http}]
`,
	}
}

// dockerConfig is a ~/.docker/config.json as docker login writes it for
// host.
func dockerConfig(host, user, password string) string {
	auth := base64.StdEncoding.EncodeToString([]byte(user + ":" + password))
	return fmt.Sprintf(`{"auths": {%q: {"auth": %q}}}`, host, auth)
}

// TestJourneyOCIArtifact: an OCI source following a semver range of a
// registry repository of plain manifests, with a Docker config's
// credentials; render fetches without --path; a new tag pushed inside
// the range is planned and applied, and a later one is applied by
// syncd run.
func TestJourneyOCIArtifact(t *testing.T) {
	const (
		ns       = "storefront-oci"
		user     = "robot-manifests"
		password = "Tb6Ym1Kd8Gs3Qw9Nc4Rv"
	)
	w := newWorkspace(t)
	ensureNamespace(t, ns)
	reg := ociregistry.Start()
	t.Cleanup(reg.Close)
	reg.RequireBasic(user, password)
	push := func(tag, theme string) string {
		t.Helper()
		digest, err := reg.PushFiles("manifests/storefront", tag, storefrontArtifact(tag, theme))
		if err != nil {
			t.Fatal(err)
		}
		return digest
	}
	push("1.0.0", "light")
	push("2.0.0", "neon")  // outside the range
	push("latest", "neon") // not a version
	docker := w.file("docker/config.json", dockerConfig(reg.Host, user, password))
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: storefront
    oci:
      url: %s
      semver: ">=1.0.0 <2.0.0"
      interval: 10m
      auth:
        dockerConfigFile: %s
apps:
  - name: storefront
    source: storefront
    path: .
    namespace: %s
`, reg.URL("manifests/storefront"), docker, ns))

	cl := newCluster(t)
	j := &journey{
		w: w, app: "storefront",
		rendered: []string{"THEME: light", "ghcr.io/example/storefront:1.0.0", "object: apps/Deployment " + ns + "/storefront"},
		secrets:  []string{password, base64.StdEncoding.EncodeToString([]byte(user + ":" + password))},
		change: func() func(*testing.T) {
			push("1.1.0", "dark")
			return func(t *testing.T) {
				checkStorefront(t, cl, ns, "1.1.0", "dark")
			}
		},
	}
	j.run(t)

	step := stepper(t)
	digest := push("1.2.0", "contrast")
	d := w.startDaemon()
	hex := strings.TrimPrefix(digest, "sha256:")
	d.waitApplied("storefront", func(rev string) bool { return strings.Contains(rev, hex[:12]) })
	checkStorefront(t, cl, ns, "1.2.0", "contrast")
	d.stop()
	step("syncd run applies 1.2.0")
	w.checkNoSecrets(j.secrets...)
}

// checkStorefront fails the test unless the live storefront runs
// version with theme.
func checkStorefront(t *testing.T, cl *cluster, ns, version, theme string) {
	t.Helper()
	cm, err := cl.get(objectRef{kind: "ConfigMap", namespace: ns, name: "storefront"})
	if err != nil {
		t.Fatal(err)
	}
	d, err := cl.get(objectRef{group: "apps", kind: "Deployment", namespace: ns, name: "storefront"})
	if err != nil {
		t.Fatal(err)
	}
	gotTheme, _, _ := unstructured.NestedString(cm.Object, "data", "THEME")
	containers, _, _ := unstructured.NestedSlice(d.Object, "spec", "template", "spec", "containers")
	gotImage := ""
	if len(containers) > 0 {
		gotImage, _, _ = unstructured.NestedString(containers[0].(map[string]any), "image")
	}
	if want := "ghcr.io/example/storefront:" + version; gotTheme != theme || gotImage != want {
		t.Errorf("live storefront in %s: theme %q image %q, want %q %q", ns, gotTheme, gotImage, theme, want)
	}
}
