package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// substPassword and substPassword2 are the values of the Secret variable
// PASSWORD; no output may hold them.
const (
	substPassword  = "hunter2-from-secret"
	substPassword2 = "rotated-hunter3"
)

// substConfig writes a config with app web in ns substituting COLOR
// inline, REPLICAS from a file beside the config, and PASSWORD from the
// Secret subst-vars in syncd's namespace.
func substConfig(t *testing.T, ns, extra string) string {
	t.Helper()
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "vars.yaml"), []byte("REPLICAS: 2\nCOLOR: overridden-by-substitute\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: "file:///nonexistent/repo", branch: main, interval: 1m}
apps:
- name: web
  source: repo
  namespace: %s
  substitute:
    COLOR: blue
  substituteFrom:
  - file: vars.yaml
  - kind: Secret
    name: subst-vars
  - kind: ConfigMap
    name: not-there
    optional: true
%s`, ns, extra)
	path := filepath.Join(dir, "syncd.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// substManifests use every rule: a value, a default, an escape, a number,
// a Secret's stringData and an object that opts out.
var substManifests = map[string]string{
	"cm.yaml":     "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: ${COLOR}\n  size: ${SIZE:=medium}\n  literal: $${COLOR}\n",
	"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: ${PASSWORD}\n",
	"deploy.yaml": deployYAML("  replicas: ${REPLICAS}\n"),
	"raw.yaml":    "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: raw\n  annotations: {kustomize.toolkit.fluxcd.io/substitute: disabled}\ndata:\n  color: ${COLOR}\n",
}

// setSyncdNamespace makes a namespace of its own syncd's for the test,
// holding the Secret subst-vars with PASSWORD.
func setSyncdNamespace(t *testing.T, password string) string {
	t.Helper()
	sys := env.Namespace(t)
	t.Setenv("POD_NAMESPACE", sys)
	putVarsSecret(t, sys, password)
	return sys
}

func putVarsSecret(t *testing.T, ns, password string) {
	t.Helper()
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "subst-vars", Namespace: ns}, Data: map[string][]byte{"PASSWORD": []byte(password + "\n")}}
	cs := env.Clientset(t).CoreV1().Secrets(ns)
	if _, err := cs.Create(context.Background(), s, metav1.CreateOptions{}); apierrors.IsAlreadyExists(err) {
		_, err = cs.Update(context.Background(), s, metav1.UpdateOptions{})
		if err != nil {
			t.Fatal(err)
		}
	} else if err != nil {
		t.Fatal(err)
	}
}

// noPassword fails the test when an output holds a value of PASSWORD.
func noPassword(t *testing.T, what string, r result) {
	t.Helper()
	for _, v := range []string{substPassword, substPassword2} {
		if strings.Contains(r.stdout+r.stderr, v) {
			t.Errorf("%s prints the Secret's value %q:\n%s%s", what, v, r.stdout, r.stderr)
		}
	}
}

// TestSubstituteApplyAndPlan applies an app with variables from the
// config, a file and a Secret through `syncd apply --config`, checks the
// live objects and that `syncd drift` finds nothing, then rotates the
// Secret: `syncd drift` reports the Secret and `syncd plan` shows it to
// change, its value never printed.
func TestSubstituteApplyAndPlan(t *testing.T) {
	ns := env.Namespace(t)
	sys := setSyncdNamespace(t, substPassword)
	cfg := substConfig(t, ns, "")
	dir := writeFiles(t, substManifests)

	r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir)
	noPassword(t, "plan before the first apply", r)
	if r.code != exitChanges {
		t.Fatalf("plan: exit %d, want %d\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	r = syncd(t, "apply", "--config", cfg, "--app", "web", "--path", dir)
	noPassword(t, "apply", r)
	if r.code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	cs := env.Clientset(t)
	ctx := context.Background()
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := map[string]string{"color": "blue", "size": "medium", "literal": "${COLOR}"}; fmt.Sprint(cm.Data) != fmt.Sprint(want) {
		t.Errorf("ConfigMap settings data = %v, want %v", cm.Data, want)
	}
	raw, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "raw", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if raw.Data["color"] != "${COLOR}" {
		t.Errorf("ConfigMap raw (substitution disabled) color = %q, want ${COLOR}", raw.Data["color"])
	}
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 2 {
		t.Errorf("Deployment replicas = %v, want 2 (from vars.yaml)", dep.Spec.Replicas)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["password"]) != substPassword {
		t.Errorf("Secret creds password is not the Secret variable's value (newline removed)")
	}

	// What was applied is what the render substitutes: no drift, the
	// disabled object's ${COLOR} included.
	if rep := driftJSON(t, exitOK, "--config", cfg, "--app", "web", "--path", dir); len(rep.Findings) != 0 {
		t.Errorf("drift right after the apply: %+v", rep.Findings)
	}

	putVarsSecret(t, sys, substPassword2)
	// The rotated variable makes Git's Secret differ from the live one:
	// drift names the field, never a value.
	r = syncd(t, "drift", "--config", cfg, "--app", "web", "--path", dir)
	noPassword(t, "drift after rotating the Secret", r)
	if r.code != exitChanges || !strings.Contains(r.stdout, "Secret "+ns+"/creds") {
		t.Errorf("drift after rotating the Secret: exit %d, want %d naming Secret creds\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	r = syncd(t, "drift", "--config", cfg, "--app", "web", "--path", dir, "-o", "json")
	noPassword(t, "drift -o json after rotating the Secret", r)
	code, rep, stderr := planJSON(t, cfg, dir)
	if strings.Contains(stderr, substPassword2) {
		t.Errorf("plan -o json prints the rotated value on stderr")
	}
	if code != exitChanges {
		t.Fatalf("plan after rotating the Secret: exit %d, want %d", code, exitChanges)
	}
	if o := findObject(t, rep, "Secret", "creds"); o.Action == "" || o.Action == "unchanged" {
		t.Errorf("plan does not show Secret creds changing: %+v", o)
	}
	r = syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir)
	noPassword(t, "plan after rotating the Secret", r)
	if !strings.Contains(r.stdout, "creds") {
		t.Errorf("plan does not mention Secret creds:\n%s", r.stdout)
	}
}

// TestSubstituteRefusals: strict mode refuses an unset variable and a
// Secret's value may not land in a ConfigMap; each names the file, object
// and field, prints no value and applies nothing.
func TestSubstituteRefusals(t *testing.T) {
	tests := map[string]struct {
		file, extra string
		want        []string
	}{
		"unset variable, strict by default": {
			file: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: ${COLOR}\n  b: ${MISSING}\n",
			want: []string{"cm.yaml: document 1", "ConfigMap", "variable MISSING at .data.b is not set"},
		},
		"a Secret's value in a ConfigMap": {
			file: "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  password: ${PASSWORD}\n",
			want: []string{"cm.yaml: document 1", "PASSWORD (from Secret ", "land in .data.password, which syncd prints"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			setSyncdNamespace(t, substPassword)
			cfg := substConfig(t, ns, tc.extra)
			dir := writeFiles(t, map[string]string{"cm.yaml": tc.file})
			for _, cmd := range []string{"apply", "plan"} {
				r := syncd(t, cmd, "--config", cfg, "--app", "web", "--path", dir)
				t.Logf("%s: %s%s", cmd, r.stdout, r.stderr)
				noPassword(t, cmd, r)
				if r.code != exitError {
					t.Errorf("%s: exit %d, want %d\n%s%s", cmd, r.code, exitError, r.stdout, r.stderr)
				}
				for _, w := range tc.want {
					if !strings.Contains(r.stdout+r.stderr, w) {
						t.Errorf("%s: output does not say %q:\n%s%s", cmd, w, r.stdout, r.stderr)
					}
				}
			}
			if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "settings", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("the refused ConfigMap exists (err %v): nothing may be applied", err)
			}
		})
	}
}

// TestSubstituteRender: syncd render, which never talks to the cluster,
// refuses an app with a substituteFrom Secret, naming it and saying what
// to run instead, and prints nothing.
func TestSubstituteRender(t *testing.T) {
	cfg := substConfig(t, "web", "")
	dir := writeFiles(t, substManifests)
	r := render(t, "--config", cfg, "--app", "web", "--path", dir)
	want := "app web: substituteFrom[1] (Secret subst-vars): syncd render does not read the cluster, where this ConfigMap or Secret is: preview the app with `syncd plan --config`"
	if r.code != exitError || !strings.Contains(r.stderr, want) || r.stdout != "" {
		t.Errorf("render: exit %d, want %d with %q and no output\n%s%s", r.code, exitError, want, r.stdout, r.stderr)
	}
}

// TestSubstituteNotStrict: with substituteStrict: false an unset variable
// becomes empty, as in Flux without the feature gate.
func TestSubstituteNotStrict(t *testing.T) {
	ns := env.Namespace(t)
	setSyncdNamespace(t, substPassword)
	cfg := substConfig(t, ns, "  substituteStrict: false\n")
	dir := writeFiles(t, map[string]string{"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: x${MISSING}y\n"})
	if r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", dir); r.code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if got := getNamedConfigMap(t, ns, "settings").Data["a"]; got != "xy" {
		t.Errorf("a = %q, want %q", got, "xy")
	}
}

func getNamedConfigMap(t *testing.T, ns, name string) *corev1.ConfigMap {
	t.Helper()
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	return cm
}
