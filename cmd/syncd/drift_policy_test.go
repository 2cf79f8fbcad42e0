package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestDriftYieldedByPolicy: the app's conflict policy yields .data.color
// to "operator". After the operator takes it, `syncd drift` exits 0 and
// reports the field as yielded (information); the same take-over by a
// manager the policy does not yield to is drift.
func TestDriftYieldedByPolicy(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf(`- name: web
  source: repo
  namespace: %s
  conflicts:
    rules:
    - paths: [.data.color]
      managers: [operator]
      action: yield
`, ns))
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue", "size": "s"})})
	if r := syncd(t, "apply", "--config", cfg, "--path", dir); r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	patch := func(manager, data string) {
		t.Helper()
		if _, err := cms.Patch(context.Background(), "seed", types.MergePatchType, []byte(`{"data":`+data+`}`), metav1.PatchOptions{FieldManager: manager}); err != nil {
			t.Fatal(err)
		}
	}
	patch("operator", `{"color":"green"}`)
	report := driftJSON(t, exitOK, "--config", cfg, "--path", dir)
	var got []string
	for _, f := range report.Findings {
		got = append(got, f.Path+" "+f.Class+" "+fmt.Sprint(f.Desired)+"→"+fmt.Sprint(f.Live))
	}
	if want := []string{".data.color yielded blue→green"}; strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("findings = %q, want %q", got, want)
	}

	patch("kubectl-edit", `{"size":"xl"}`)
	report = driftJSON(t, exitChanges, "--config", cfg, "--path", dir)
	got = nil
	for _, f := range report.Findings {
		got = append(got, f.Path+" "+f.Class)
	}
	if want := []string{".data.color yielded", ".data.size taken-over"}; strings.Join(got, ";") != strings.Join(want, ";") {
		t.Errorf("findings = %q, want %q", got, want)
	}
}

// TestApplyDetectMode: `syncd apply --config` refuses an app in drift mode
// detect (exit 1, the mode named, nothing created), `syncd plan` still
// previews it and `syncd drift` reports the object Git declares as
// missing.
func TestApplyDetectMode(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n  drift:\n    mode: detect\n", ns))
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue"})})
	r := syncd(t, "apply", "--config", cfg, "--path", dir)
	if r.code != exitError || !strings.Contains(r.stderr, "drift.mode is detect") || !strings.Contains(r.stderr, "syncd plan --app web") {
		t.Errorf("apply of a detect-mode app: code %d, want %d and a message naming drift.mode\n%s%s", r.code, exitError, r.stdout, r.stderr)
	}
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "seed", metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Fatalf("ConfigMap after a refused apply: err %v, want NotFound", err)
	}
	if r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir); r.code != exitChanges || !strings.Contains(r.stdout, "seed") {
		t.Errorf("plan of a detect-mode app: code %d, want %d with the object to create\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	report := driftJSON(t, exitChanges, "--config", cfg, "--path", dir)
	if len(report.Findings) != 1 || report.Findings[0].Class != "deleted" || report.Findings[0].Object["name"] != "seed" {
		t.Errorf("drift of a detect-mode app never applied = %+v, want the ConfigMap deleted (missing)", report.Findings)
	}
}

// TestPlanRedactsSensitive: a ConfigMap key the app marks sensitive
// changes in Git; `syncd plan` shows the change in text and JSON without
// either value.
func TestPlanRedactsSensitive(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n  sensitive:\n  - kinds: [ConfigMap]\n    paths: [.data.password]\n", ns))
	first := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue", "password": "first-hunter2"})})
	if r := syncd(t, "apply", "--config", cfg, "--path", first); r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	next := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "green", "password": "second-s3cret"})})
	r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", next)
	if r.code != exitChanges {
		t.Fatalf("plan: code %d, want %d\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	code, rep, _ := planJSON(t, cfg, next)
	if code != exitChanges || len(rep.Objects) != 1 {
		t.Fatalf("plan -o json: code %d, objects %+v; want %d and the ConfigMap", code, rep.Objects, exitChanges)
	}
	for format, out := range map[string]string{"text": r.stdout + r.stderr, "json diff": rep.Objects[0].Diff} {
		for _, leak := range []string{"first-hunter2", "second-s3cret"} {
			if strings.Contains(out, leak) {
				t.Errorf("plan %s prints the sensitive value %q:\n%s", format, leak, out)
			}
		}
		for _, want := range []string{"-  password: <redacted>", "+  password: <redacted, changed>", "+  color: green"} {
			if !strings.Contains(out, want) {
				t.Errorf("plan %s lacks %q:\n%s", format, want, out)
			}
		}
	}
}
