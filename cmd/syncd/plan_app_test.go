package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/controller"
)

// TestPlanAppObject: an App previewed from a file (--app-file, its
// GitSource in --source-file) or from the cluster (--app NAME -n NS)
// gives the same preview as the equivalent app of a config file, from
// the source and from a --path checkout.
func TestPlanAppObject(t *testing.T) {
	ctx := context.Background()
	dyn := appDynamic(t)
	freshAppCRDs(t, dyn)
	ns, inv := env.Namespace(t), invNamespace(t)
	files := map[string]string{
		"web/cm.yaml":    cmYAML("web", "  value: \"2\"\n"),
		"web/extra.yaml": cmYAML("extra", "  value: \"1\"\n"),
	}
	repo := servedRepo(t, "apps")
	commit := map[string][]byte{}
	for name, content := range files {
		commit[name] = []byte(content)
	}
	if _, err := repo.Commit("first", commit); err != nil {
		t.Fatal(err)
	}
	checkout := writeFiles(t, files)
	live := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "web", Namespace: ns}, Data: map[string]string{"value": "1"}}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Create(ctx, live, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	appName := controller.AppName(ns, "web")
	dir := writeFiles(t, map[string]string{
		"syncd.yaml": fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: repo
    git: {url: %q, branch: main, interval: 1h}
apps:
  - name: %s
    source: repo
    path: web
    namespace: %s
`, repo.URL, appName, ns),
		"app.yaml": `apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: web
spec:
  sourceRef: {kind: GitSource, name: repo}
  path: web
`,
		"source.yaml": fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: GitSource
metadata:
  name: repo
spec:
  url: %q
  branch: main
  interval: 1h
`, repo.URL),
	})
	createObjects(t, dyn, ns,
		fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"repo"},"spec":{"url":%q,"branch":"main","interval":"1h"}}`, repo.URL),
		`{"apiVersion":"syncd.dev/v1alpha1","kind":"App","metadata":{"name":"web"},"spec":{"sourceRef":{"kind":"GitSource","name":"repo"},"path":"web"}}`)

	plan := func(args ...string) result {
		t.Helper()
		return syncd(t, append(args, "--inventory-namespace", inv, "--cache-dir", t.TempDir())...)
	}
	tests := map[string]struct {
		path string // --path, or "" for the source
	}{
		"from the source": {},
		"from a checkout": {path: filepath.Join(checkout, "web")},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var extra []string
			if tc.path != "" {
				extra = []string{"--path", tc.path}
			}
			want := plan(append([]string{"plan", "--config", filepath.Join(dir, "syncd.yaml"), "--app", appName}, extra...)...)
			// The live ConfigMap web's value is another manager's: a conflict.
			if want.code != exitConflict || !strings.Contains(want.stdout, "ConfigMap "+ns+"/extra: create") {
				t.Fatalf("plan --config: code %d, want %d and ConfigMap %s/extra created:\n%s%s", want.code, exitConflict, ns, want.stdout, want.stderr)
			}
			forms := map[string][]string{
				"--app-file":               {"plan", "--app-file", filepath.Join(dir, "app.yaml"), "--source-file", filepath.Join(dir, "source.yaml"), "-n", ns},
				"--app NAME -n NS":         {"plan", "--app", "web", "-n", ns},
				"--app-file -o json":       {"plan", "--app-file", filepath.Join(dir, "app.yaml"), "--source-file", filepath.Join(dir, "source.yaml"), "-n", ns, "-o", "json"},
				"--app NAME -n NS -o json": {"plan", "--app", "web", "-n", ns, "-o", "json"},
			}
			wantJSON := plan(append([]string{"plan", "--config", filepath.Join(dir, "syncd.yaml"), "--app", appName, "-o", "json"}, extra...)...)
			for form, args := range forms {
				got := plan(append(args, extra...)...)
				w := want
				if strings.HasSuffix(form, "json") {
					w = wantJSON
				}
				if got.code != w.code || got.stdout != w.stdout {
					t.Errorf("plan %s: code %d, want %d; output differs from plan --config's:\n--- want\n%s--- got\n%s%s", form, got.code, w.code, w.stdout, got.stdout, got.stderr)
				}
			}
		})
	}
	// With --path, no GitSource is needed.
	r := plan("plan", "--app-file", filepath.Join(dir, "app.yaml"), "-n", ns, "--path", filepath.Join(checkout, "web"))
	if r.code != exitConflict {
		t.Errorf("plan --app-file without a GitSource, with --path: code %d, want %d\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
}

// TestPlanAppObjectErrors: the forms of plan refuse what is missing or
// contradictory, naming the file and what to do.
func TestPlanAppObjectErrors(t *testing.T) {
	dir := writeFiles(t, map[string]string{
		"app.yaml":  "apiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: web, namespace: team-a}\nspec:\n  sourceRef: {kind: GitSource, name: repo}\n",
		"typo.yaml": "apiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: web}\nspec:\n  sourceRef: {kind: GitSource, name: repo}\n  prun: false\n",
		"two.yaml":  "apiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: a}\nspec: {sourceRef: {kind: GitSource, name: repo}}\n---\napiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: b}\nspec: {sourceRef: {kind: GitSource, name: repo}}\n",
		"cm.yaml":   cmYAML("x", "  k: v\n"),
		"sops.yaml": "apiVersion: syncd.dev/v1alpha1\nkind: App\nmetadata: {name: web, namespace: default}\nspec:\n  sourceRef: {kind: GitSource, name: repo}\n  decryption: {provider: sops, secretRef: {name: no-such-keys}}\n",
	})
	tests := map[string]struct {
		args []string
		want string
	}{
		"nothing":                               {args: []string{"plan"}, want: "name the app to preview"},
		"config and file":                       {args: []string{"plan", "--config", "x.yaml", "--app-file", "a.yaml"}, want: "--config and --app-file both given"},
		"config without app":                    {args: []string{"plan", "--config", "x.yaml"}, want: "--app is required with --config"},
		"no GitSource":                          {args: []string{"plan", "--app-file", filepath.Join(dir, "app.yaml")}, want: "no GitSource repo for App team-a/web (spec.sourceRef); add the GitSource to the file or give it with --source-file, or preview a checkout with --path"},
		"namespace differs":                     {args: []string{"plan", "--app-file", filepath.Join(dir, "app.yaml"), "-n", "team-b"}, want: "App web is in namespace team-a, but -n says team-b"},
		"unknown field":                         {args: []string{"plan", "--app-file", filepath.Join(dir, "typo.yaml"), "--path", dir}, want: `document 1 (App): error unmarshaling JSON: while decoding JSON: json: unknown field "prun"`},
		"SOPS keys Secret missing, with --path": {args: []string{"plan", "--app-file", filepath.Join(dir, "sops.yaml"), "--path", dir}, want: "App default/web: Secret no-such-keys cannot be read"},
		"two Apps":                              {args: []string{"plan", "--app-file", filepath.Join(dir, "two.yaml"), "--path", dir}, want: "want exactly one App"},
		"not an App":                            {args: []string{"plan", "--app-file", filepath.Join(dir, "cm.yaml"), "--path", dir}, want: `apiVersion "v1" kind "ConfigMap": want apiVersion syncd.dev/v1alpha1`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := syncd(t, tc.args...)
			if r.code != exitError || !strings.Contains(r.stderr, tc.want) {
				t.Errorf("code %d, want %d and %q:\n%s%s", r.code, exitError, tc.want, r.stdout, r.stderr)
			}
		})
	}
}

// TestPlanAppObjectSubstitutesFromItsNamespace: syncd plan of an App
// reads its substituteFrom ConfigMap in the App's namespace, as the
// controller does, not in syncd's (where a ConfigMap of that name holds
// another value).
func TestPlanAppObjectSubstitutesFromItsNamespace(t *testing.T) {
	ctx := context.Background()
	dyn := appDynamic(t)
	freshAppCRDs(t, dyn)
	ns, sys := env.Namespace(t), env.Namespace(t)
	t.Setenv("POD_NAMESPACE", sys)
	for where, value := range map[string]string{ns: "from-the-apps-namespace", sys: "from-syncds-namespace"} {
		cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "vars", Namespace: where}, Data: map[string]string{"GREETING": value}}
		if _, err := env.Clientset(t).CoreV1().ConfigMaps(where).Create(ctx, cm, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	checkout := writeFiles(t, map[string]string{"web/cm.yaml": cmYAML("web", "  value: ${GREETING}\n")})
	dir := writeFiles(t, map[string]string{"app.yaml": `apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: web
spec:
  sourceRef: {kind: GitSource, name: repo}
  path: web
  substituteFrom: [{kind: ConfigMap, name: vars}]
`})
	r := syncd(t, "plan", "--app-file", filepath.Join(dir, "app.yaml"), "-n", ns, "--path", filepath.Join(checkout, "web"), "--inventory-namespace", invNamespace(t), "--cache-dir", t.TempDir())
	if r.code != exitChanges || !strings.Contains(r.stdout, "from-the-apps-namespace") || strings.Contains(r.stdout, "from-syncds-namespace") {
		t.Errorf("plan --app-file: code %d, want %d and the value of the App's namespace's ConfigMap:\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
}

// TestPlanAppObjectReadsItsClusterKubeconfigInItsNamespace: syncd plan
// of an App of spec.cluster reads the kubeconfig Secret in the App's
// namespace, as the controller does, not in syncd's (where a Secret of
// that name names a cluster that does not answer).
func TestPlanAppObjectReadsItsClusterKubeconfigInItsNamespace(t *testing.T) {
	ctx := context.Background()
	dyn := appDynamic(t)
	freshAppCRDs(t, dyn)
	ns, sys := env.Namespace(t), env.Namespace(t)
	t.Setenv("POD_NAMESPACE", sys)
	good, err := os.ReadFile(env.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	dead := strings.ReplaceAll(string(good), env.Config.Host, "https://127.0.0.1:1")
	for where, kubeconfig := range map[string]string{ns: string(good), sys: dead} {
		s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-kubeconfig", Namespace: where}, Data: map[string][]byte{"value": []byte(kubeconfig)}}
		if _, err := env.Clientset(t).CoreV1().Secrets(where).Create(ctx, s, metav1.CreateOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	checkout := writeFiles(t, map[string]string{"web/cm.yaml": cmYAML("web", "  value: remote\n")})
	dir := writeFiles(t, map[string]string{"app.yaml": fmt.Sprintf(`apiVersion: syncd.dev/v1alpha1
kind: App
metadata:
  name: web
spec:
  sourceRef: {kind: GitSource, name: repo}
  path: web
  cluster: {name: remote, context: testenv, inventoryNamespace: %s, kubeConfig: {secretRef: {name: cluster-kubeconfig}}}
`, invNamespace(t))})
	r := syncd(t, "plan", "--app-file", filepath.Join(dir, "app.yaml"), "-n", ns, "--path", filepath.Join(checkout, "web"), "--inventory-namespace", invNamespace(t), "--cache-dir", t.TempDir())
	if r.code != exitChanges || !strings.Contains(r.stdout, "remote") {
		t.Errorf("plan --app-file: code %d, want %d and the ConfigMap planned on the cluster of the App's namespace's kubeconfig:\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
}
