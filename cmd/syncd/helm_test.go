package main

import (
	"context"
	"fmt"
	"path/filepath"
	"strings"
	"testing"

	autoscalingv1 "k8s.io/api/autoscaling/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// helmSecret is the password the test chart's values carry: it must never
// show in any output.
const helmSecret = "hunter2-helm-s3cr3t"

// testChartFiles is our own small chart, below app/: a ConfigMap from
// values (whose "annotations:" renders null, as kube-state-metrics'
// Service does without values: syncd's managers annotation there is no
// drift), a Secret from values, a Deployment whose replicas are rendered
// unconditionally (the HPA trap), a pre-install hook, a test hook, and a
// ConfigMap rendered only when the cluster serves apps/v1 Deployments
// (Helm's default capabilities list group/versions only, so without a
// cluster it is not rendered).
func testChartFiles(greeting string) map[string][]byte {
	return map[string][]byte{
		"app/Chart.yaml":   []byte("apiVersion: v2\nname: shop\nversion: 0.1.0\n"),
		"app/values.yaml":  []byte("greeting: hello\nreplicas: 2\npassword: changeme\n"),
		"values/prod.yaml": []byte("greeting: " + greeting + "\n"),
		"app/templates/config.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: {{ .Release.Name }}-config
  annotations:
    {{- with .Values.configAnnotations }}
    {{- toYaml . | nindent 4 }}
    {{- end }}
data:
  greeting: {{ .Values.greeting | quote }}
`),
		"app/templates/secret.yaml": []byte(`apiVersion: v1
kind: Secret
metadata:
  name: {{ .Release.Name }}-pw
stringData:
  password: {{ .Values.password | quote }}
`),
		"app/templates/deploy.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata:
  name: {{ .Release.Name }}
spec:
  replicas: {{ .Values.replicas }}
  selector: {matchLabels: {app: shop}}
  template:
    metadata: {labels: {app: shop}}
    spec:
      containers: [{name: web, image: "nginx:1.27"}]
`),
		"app/templates/caps.yaml": []byte(`{{- if .Capabilities.APIVersions.Has "apps/v1/Deployment" }}
apiVersion: v1
kind: ConfigMap
metadata:
  name: has-deployments
{{- end }}
`),
		"app/templates/hooks.yaml": []byte(`apiVersion: v1
kind: ConfigMap
metadata:
  name: migrate
  annotations: {helm.sh/hook: pre-install}
---
apiVersion: v1
kind: Pod
metadata:
  name: smoke-test
  annotations: {helm.sh/hook: test}
spec:
  containers: [{name: t, image: busybox}]
`),
	}
}

// helmConfig serves the test chart from a loopback Git repository and
// writes a syncd.yaml whose app web renders it into ns, with the
// password inline and a values file; the HPA simulator's replicas are
// yielded to.
func helmConfig(t *testing.T, ns, greeting string) (cfg string, repo *gitserver.Repo) {
	t.Helper()
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err = srv.NewRepo("charts", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("chart", testChartFiles(greeting)); err != nil {
		t.Fatal(err)
	}
	return writeHelmConfig(t, repo.URL, ns, helmSecret), repo
}

func writeHelmConfig(t *testing.T, url, ns, password string) string {
	t.Helper()
	return filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: %s, branch: main, interval: 1m}
apps:
- name: web
  source: repo
  path: app
  namespace: %s
  pruneBudget: 100
  helm:
    releaseName: shop
    valuesFiles: [values/prod.yaml]
    values: {password: %s}
  conflicts:
    rules:
    - kinds: [apps/Deployment]
      paths: [.spec.replicas]
      managers: [hpa-sim]
      action: yield
`, url, ns, password)}), "syncd.yaml")
}

// TestHelmChartFromGit: a chart in a Git source renders, applies (hooks
// in their stages, test hooks left out), re-applies as a no-op, reports
// no drift, shows a values change in syncd plan, keeps an HPA's replicas,
// and never prints the Secret's value.
func TestHelmChartFromGit(t *testing.T) {
	ns := env.Namespace(t)
	cfg, repo := helmConfig(t, ns, "from-prod")
	tr := newTranscript(t, cfg)

	r := tr.run("apply", exitOK, "apply")
	for _, want := range []string{"ConfigMap " + ns + "/shop-config created", "Secret " + ns + "/shop-pw created", "apps/Deployment " + ns + "/shop created", "ConfigMap " + ns + "/migrate created", "ConfigMap " + ns + "/has-deployments created"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply output lacks %q:\n%s", want, r.stdout)
		}
	}
	if strings.Contains(r.stdout, "smoke-test") {
		t.Errorf("the test hook was applied:\n%s", r.stdout)
	}
	if i, j := strings.Index(r.stdout, "/migrate created"), strings.Index(r.stdout, "/shop-config created"); i < 0 || j < 0 || i > j {
		t.Errorf("the pre-install hook was not applied before the chart's objects:\n%s", r.stdout)
	}
	cs := env.Clientset(t)
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(context.Background(), "shop-config", metav1.GetOptions{})
	if err != nil || cm.Data["greeting"] != "from-prod" {
		t.Fatalf("shop-config = %v (get: %v), want greeting from-prod from the values file", cm.Data, err)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(context.Background(), "shop-pw", metav1.GetOptions{})
	if err != nil || string(sec.Data["password"]) != helmSecret {
		t.Fatalf("Secret shop-pw does not hold the inline value (get: %v)", err)
	}
	if _, err := cs.CoreV1().Pods(ns).Get(context.Background(), "smoke-test", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("test hook Pod exists (get: %v)", err)
	}

	// No-op: nothing written, the hook included, and no drift.
	r = tr.run("re-apply", exitOK, "apply")
	if strings.Contains(r.stdout, "created") || strings.Contains(r.stdout, "configured") {
		t.Errorf("re-apply of the same chart wrote something:\n%s", r.stdout)
	}
	tr.run("drift", exitOK, "drift")

	// The HPA takes replicas through /scale; the chart still renders 2,
	// and the conflict policy yields: the HPA's value stays.
	scale := &autoscalingv1.Scale{ObjectMeta: metav1.ObjectMeta{Name: "shop", Namespace: ns}, Spec: autoscalingv1.ScaleSpec{Replicas: 5}}
	if _, err := cs.AppsV1().Deployments(ns).UpdateScale(context.Background(), "shop", scale, metav1.UpdateOptions{FieldManager: "hpa-sim"}); err != nil {
		t.Fatal(err)
	}
	tr.run("apply after the HPA scaled", exitOK, "apply")
	d, err := cs.AppsV1().Deployments(ns).Get(context.Background(), "shop", metav1.GetOptions{})
	if err != nil || d.Spec.Replicas == nil || *d.Spec.Replicas != 5 {
		t.Errorf("replicas after re-apply = %v (get: %v), want the HPA's 5", d.Spec.Replicas, err)
	}

	// A values change in Git shows as a diff in syncd plan.
	if _, err := repo.Commit("greeting", map[string][]byte{"values/prod.yaml": []byte("greeting: bonjour\n")}); err != nil {
		t.Fatal(err)
	}
	r = tr.output("plan", "plan", "--app", "web")
	if !strings.Contains(r.stdout, "bonjour") || !strings.Contains(r.stdout, "from-prod") || !strings.Contains(r.stdout, "shop-config") {
		t.Errorf("plan does not show the greeting change (code %d):\n%s%s", r.code, r.stdout, r.stderr)
	}

	// syncd render has no cluster: Helm's default capabilities do not
	// list apps/v1/Deployment.
	files := flatten(testChartFiles("x"))
	files[".git/HEAD"] = "ref: refs/heads/main\n" // the repository root values files are relative to
	local := writeFiles(t, files)
	code, out, stderr := runCmd(t, "render", "--config", cfg, "--app", "web", "--path", filepath.Join(local, "app"))
	tr.record("render", out+stderr)
	if code != exitOK || !strings.Contains(out, "shop-config") || strings.Contains(out, "has-deployments") {
		t.Errorf("render without a cluster: code %d, want shop-config without has-deployments\n%s%s", code, out, stderr)
	}

	tr.neverShows(helmSecret)
}

// TestHelmChartRefused: a chart that fails to render changes nothing,
// and the error names the chart's file (and line where Helm gives one).
func TestHelmChartRefused(t *testing.T) {
	tests := map[string]struct {
		files map[string][]byte
		want  []string
	}{
		"missing dependency": {
			files: map[string][]byte{"app/Chart.yaml": []byte("apiVersion: v2\nname: shop\nversion: 0.1.0\ndependencies:\n- name: redis\n  version: 1.0.0\n  repository: https://charts.example.com\n")},
			want:  []string{"app/Chart.yaml", `dependency "redis"`, "not vendored"},
		},
		"values file not YAML": {
			files: map[string][]byte{"values/prod.yaml": []byte("greeting: [" + helmSecret + "\n")},
			want:  []string{"values/prod.yaml", "not a YAML mapping", "line "},
		},
		"template error": {
			files: map[string][]byte{"app/templates/bad.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Values.password.nope }}\n")},
			want:  []string{"chart shop", "app/templates/bad.yaml:4:"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			cfg, repo := helmConfig(t, ns, "x")
			if _, err := repo.Commit("break", tc.files); err != nil {
				t.Fatal(err)
			}
			r := syncd(t, "apply", "--config", cfg, "--cache-dir", t.TempDir())
			if r.code == exitOK {
				t.Fatalf("apply of a broken chart succeeded:\n%s", r.stdout)
			}
			for _, w := range tc.want {
				if !strings.Contains(r.stdout+r.stderr, w) {
					t.Errorf("output does not mention %q:\n%s%s", w, r.stdout, r.stderr)
				}
			}
			if strings.Contains(r.stdout+r.stderr, helmSecret) {
				t.Errorf("output shows the Secret's value:\n%s%s", r.stdout, r.stderr)
			}
			list, err := env.Clientset(t).CoreV1().ConfigMaps(ns).List(context.Background(), metav1.ListOptions{})
			if err != nil {
				t.Fatal(err)
			}
			for _, cm := range list.Items {
				if cm.Name != "kube-root-ca.crt" {
					t.Errorf("ConfigMap %s was applied from a chart that failed to render", cm.Name)
				}
			}
		})
	}
}

func flatten(files map[string][]byte) map[string]string {
	out := make(map[string]string, len(files))
	for k, v := range files {
		out[k] = string(v)
	}
	return out
}

// TestHelmChartCRDCapabilities: a template gated on an API of the
// chart's own crds/ renders on the first apply, as with helm install
// (which creates crds/ before reading the capabilities), and syncd
// render, without a cluster, renders the same objects.
func TestHelmChartCRDCapabilities(t *testing.T) {
	ns := env.Namespace(t)
	group := ns + ".example.com" // cluster-scoped: unique per test
	crds := schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}
	dyn := dynamic.NewForConfigOrDie(env.Config)
	t.Cleanup(func() { _ = dyn.Resource(crds).Delete(context.Background(), "gizmos."+group, metav1.DeleteOptions{}) })
	files := map[string][]byte{
		"app/Chart.yaml":       []byte("apiVersion: v2\nname: gizmo\nversion: 0.1.0\n"),
		"app/crds/gizmos.yaml": []byte(crdYAML(group, "gizmos", "Gizmo", "\n              size: {type: integer}")),
		"app/templates/g.yaml": []byte(fmt.Sprintf(`{{- if .Capabilities.APIVersions.Has "%[1]s/v1/Gizmo" }}
apiVersion: %[1]s/v1
kind: Gizmo
metadata: {name: default-gizmo}
spec: {size: 1}
{{- end }}
`, group)),
	}
	srv, err := gitserver.Start(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = srv.Close() })
	repo, err := srv.NewRepo("charts", t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := repo.Commit("chart", files); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: %s, branch: main, interval: 1m}
apps:
- name: web
  source: repo
  path: app
  namespace: %s
`, repo.URL, ns)}), "syncd.yaml")
	tr := newTranscript(t, cfg)
	local := writeFiles(t, flatten(files))
	code, out, stderr := runCmd(t, "render", "--config", cfg, "--app", "web", "--path", filepath.Join(local, "app"))
	if code != exitOK || !strings.Contains(out, "kind: Gizmo") {
		t.Errorf("syncd render: code %d, want the Gizmo rendered\n%s%s", code, out, stderr)
	}
	tr.run("first apply", exitOK, "apply")
	gizmos := schema.GroupVersionResource{Group: group, Version: "v1", Resource: "gizmos"}
	if _, err := dyn.Resource(gizmos).Namespace(ns).Get(context.Background(), "default-gizmo", metav1.GetOptions{}); err != nil {
		t.Errorf("the first apply did not create the Gizmo: %v", err)
	}
	again := tr.run("re-apply", exitOK, "apply")
	if strings.Contains(again.stdout, "created") || strings.Contains(again.stdout, "configured") {
		t.Errorf("the second apply of the same revision wrote something:\n%s", again.stdout)
	}
}

// TestHelmChartReleaseNamespace: through the command line, a chart
// rendered without apps[].namespace is refused naming what
// .Release.Namespace was and what to set, not blaming the template that
// writes it; helm.namespace alone is .Release.Namespace, and places no
// object that sets none.
func TestHelmChartReleaseNamespace(t *testing.T) {
	chart := writeFiles(t, map[string]string{
		"Chart.yaml": "apiVersion: v2\nname: nsless\nversion: 0.1.0\n",
		"templates/cm.yaml": `apiVersion: v1
kind: ConfigMap
metadata:
  name: cfg
  namespace: {{ .Release.Namespace }}
data:
  ns: {{ .Release.Namespace | quote }}
`,
		"templates/bare.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: bare}\n",
	})
	tests := map[string]struct {
		app  string // the app's fields but name, source and path
		want []string
	}{
		"neither namespace": {
			want: []string{"app web", "templates/cm.yaml: document 1 (v1 ConfigMap cfg)", "empty .Release.Namespace", "neither apps[].namespace nor helm.namespace is set", "set apps[].namespace"},
		},
		"helm.namespace alone": {
			app:  "  helm: {namespace: team-a}\n",
			want: []string{"templates/bare.yaml: document 1 (v1 ConfigMap bare)", "helm.namespace (team-a) sets .Release.Namespace only", "set apps[].namespace: team-a"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cfg := filepath.Join(writeFiles(t, map[string]string{"syncd.yaml": `apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: https://git.example.com/none.git, branch: main, interval: 1m}
apps:
- name: web
  source: repo
  path: chart
` + tc.app}), "syncd.yaml")
			code, out, stderr := runCmd(t, "render", "--config", cfg, "--app", "web", "--path", chart)
			if code == exitOK {
				t.Fatalf("render succeeded:\n%s", out)
			}
			for _, w := range tc.want {
				if !strings.Contains(stderr, w) {
					t.Errorf("error does not mention %q:\n%s", w, stderr)
				}
			}
			if strings.Contains(stderr, "set it, or set the app's namespace") {
				t.Errorf("error blames the template:\n%s", stderr)
			}
		})
	}
}
