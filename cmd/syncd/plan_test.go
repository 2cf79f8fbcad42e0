package main

import (
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/preview"
)

// planConfig writes a config with one app "web" applying to ns under the
// default manager syncd-web, with the conflict policy given as YAML (or
// none). The source is never fetched: every command passes --path.
func planConfig(t *testing.T, ns, conflicts string) string {
	t.Helper()
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: "file://%s", branch: main, interval: 1m}
apps:
- name: web
  source: repo
  namespace: %s
%s`, t.TempDir(), ns, conflicts)
	path := filepath.Join(t.TempDir(), "syncd.yaml")
	if err := os.WriteFile(path, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

func cmYAML(name, data string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s\ndata:\n%s", name, data)
}

func deployYAML(replicas string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata: {name: web}
spec:
` + replicas + `  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: app, image: "example.com/web:1"}]
`
}

func secretYAML(password string) string {
	return "apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: " + password + "\n"
}

// applyApp really applies the files as app web.
func applyApp(t *testing.T, cfg string, files map[string]string) {
	t.Helper()
	r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", writeFiles(t, files))
	if r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
}

// resourceVersions returns the resourceVersion of every ConfigMap, Secret
// and Deployment in ns, to prove a plan wrote nothing.
func resourceVersions(t *testing.T, ns string) map[string]string {
	t.Helper()
	dyn := dynamic.NewForConfigOrDie(env.Config)
	out := map[string]string{}
	for _, gvr := range []schema.GroupVersionResource{{Version: "v1", Resource: "configmaps"}, {Version: "v1", Resource: "secrets"}, {Group: "apps", Version: "v1", Resource: "deployments"}} {
		list, err := dyn.Resource(gvr).Namespace(ns).List(context.Background(), metav1.ListOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for _, u := range list.Items {
			if u.GetName() == "kube-root-ca.crt" {
				continue
			}
			out[gvr.Resource+"/"+u.GetName()] = u.GetResourceVersion()
		}
	}
	return out
}

// planJSON runs syncd plan -o json and decodes the report strictly.
func planJSON(t *testing.T, cfg, dir string) (int, *preview.Report, string) {
	t.Helper()
	r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", "json")
	dec := json.NewDecoder(strings.NewReader(r.stdout))
	dec.DisallowUnknownFields()
	rep := &preview.Report{}
	if err := dec.Decode(rep); err != nil {
		t.Fatalf("plan -o json: code %d, output does not decode into the documented shape: %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	return r.code, rep, r.stderr
}

func findObject(t *testing.T, rep *preview.Report, kind, name string) preview.Object {
	t.Helper()
	for _, o := range rep.Objects {
		if o.Object.Kind == kind && o.Object.Name == name {
			return o
		}
	}
	t.Fatalf("report has no %s %s: %+v", kind, name, rep.Objects)
	return preview.Object{}
}

func TestPlan(t *testing.T) {
	type want struct {
		code      int
		action    preview.Action
		diff      []string // lines the diff must contain
		noDiff    []string // strings the whole output must not contain
		conflicts []preview.Conflict
		handoffs  []preview.Handoff
		ownership []preview.Move
	}
	tests := map[string]struct {
		conflicts string
		planApp   string            // app settings for the plan when they differ from the apply's
		live      map[string]string // applied by syncd before the plan
		other     func(t *testing.T, ns string)
		git       map[string]string
		kind      string
		name      string
		want      want
	}{
		"new object is created": {
			git:  map[string]string{"cm.yaml": cmYAML("cfg", "  color: blue\n")},
			kind: "ConfigMap", name: "cfg",
			want: want{code: exitChanges, action: preview.Create, diff: []string{"--- /dev/null", "+  color: blue"}},
		},
		"unchanged object": {
			live: map[string]string{"cm.yaml": cmYAML("cfg", "  color: blue\n")},
			git:  map[string]string{"cm.yaml": cmYAML("cfg", "  color: blue\n")},
			kind: "ConfigMap", name: "cfg",
			want: want{code: exitOK, action: preview.Unchanged},
		},
		"changed value is an update": {
			live: map[string]string{"cm.yaml": cmYAML("cfg", "  color: blue\n  size: small\n")},
			git:  map[string]string{"cm.yaml": cmYAML("cfg", "  color: green\n  size: small\n")},
			kind: "ConfigMap", name: "cfg",
			want: want{code: exitChanges, action: preview.Update, diff: []string{"-  color: blue\n", "+  color: green\n", "   size: small\n"}},
		},
		"conflict under fail blocks": {
			live:  map[string]string{"cm.yaml": cmYAML("cfg", "  color: blue\n")},
			other: editColor,
			git:   map[string]string{"cm.yaml": cmYAML("cfg", "  color: green\n")},
			kind:  "ConfigMap", name: "cfg",
			want: want{code: exitConflict, action: preview.Update,
				conflicts: []preview.Conflict{{Path: ".data.color", Manager: "kubectl-edit", Outcome: preview.OutcomeFail}}},
		},
		"conflict under force is taken": {
			conflicts: "  conflicts: {default: force}\n",
			live:      map[string]string{"cm.yaml": cmYAML("cfg", "  color: blue\n")},
			other:     editColor,
			git:       map[string]string{"cm.yaml": cmYAML("cfg", "  color: green\n")},
			kind:      "ConfigMap", name: "cfg",
			want: want{code: exitChanges, action: preview.Update, diff: []string{"-  color: red\n", "+  color: green\n"},
				conflicts: []preview.Conflict{{Path: ".data.color", Manager: "kubectl-edit", Outcome: preview.OutcomeForce}},
				ownership: []preview.Move{{Path: ".data.color", From: "kubectl-edit", To: "syncd-web"}}},
		},
		"conflict under yield leaves the field": {
			conflicts: "  conflicts: {default: yield}\n",
			live:      map[string]string{"cm.yaml": cmYAML("cfg", "  color: blue\n  size: small\n")},
			other:     editColor,
			git:       map[string]string{"cm.yaml": cmYAML("cfg", "  color: green\n  size: large\n")},
			kind:      "ConfigMap", name: "cfg",
			want: want{code: exitChanges, action: preview.Update, diff: []string{"   color: red\n", "-  size: small\n", "+  size: large\n"},
				conflicts: []preview.Conflict{{Path: ".data.color", Manager: "kubectl-edit", Outcome: preview.OutcomeYield}}},
		},
		"dropping replicas syncd owns alone is a handoff": {
			live: map[string]string{"deploy.yaml": deployYAML("  replicas: 3\n")},
			git:  map[string]string{"deploy.yaml": deployYAML("")},
			kind: "Deployment", name: "web",
			want: want{code: exitChanges, action: preview.Update, handoffs: []preview.Handoff{{Path: ".spec.replicas"}}, noDiff: []string{"replicas: 1"}},
		},
		"split change moves a field between the app's managers": {
			planApp: "  split:\n  - manager: syncd-web-release\n    paths: [.data.image]\n",
			live:    map[string]string{"cm.yaml": cmYAML("cfg", "  image: web:1\n  color: blue\n")},
			git:     map[string]string{"cm.yaml": cmYAML("cfg", "  image: web:1\n  color: blue\n")},
			kind:    "ConfigMap", name: "cfg",
			want: want{code: exitChanges, action: preview.Update,
				ownership: []preview.Move{{Path: ".data.image", From: "syncd-web", To: "syncd-web-release"}}},
		},
		"secret values are redacted": {
			live: map[string]string{"secret.yaml": secretYAML("hunter2-old")},
			git:  map[string]string{"secret.yaml": secretYAML("hunter2-new")},
			kind: "Secret", name: "creds",
			want: want{code: exitChanges, action: preview.Update,
				diff:   []string{"-  password: <redacted>\n", "+  password: <redacted, changed>\n"},
				noDiff: []string{"hunter2", base64.StdEncoding.EncodeToString([]byte("hunter2-old")), base64.StdEncoding.EncodeToString([]byte("hunter2-new"))}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			cfg := planConfig(t, ns, tc.conflicts)
			if tc.live != nil {
				applyApp(t, cfg, tc.live)
			}
			if tc.other != nil {
				tc.other(t, ns)
			}
			before := resourceVersions(t, ns)
			dir := writeFiles(t, tc.git)
			if tc.planApp != "" {
				cfg = planConfig(t, ns, tc.planApp)
			}
			code, rep, stderr := planJSON(t, cfg, dir)
			if code != tc.want.code {
				t.Errorf("exit code %d, want %d\n%s", code, tc.want.code, stderr)
			}
			o := findObject(t, rep, tc.kind, tc.name)
			if o.Action != tc.want.action {
				t.Errorf("action %q, want %q (diff:\n%s)", o.Action, tc.want.action, o.Diff)
			}
			for _, line := range tc.want.diff {
				if !strings.Contains(o.Diff, line) {
					t.Errorf("diff lacks %q:\n%s", line, o.Diff)
				}
			}
			if tc.want.action == preview.Unchanged && o.Diff != "" {
				t.Errorf("unchanged object has a diff:\n%s", o.Diff)
			}
			if diff := cmp.Diff(orEmpty(tc.want.conflicts), o.Conflicts); diff != "" {
				t.Errorf("conflicts (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(orEmpty(tc.want.handoffs), o.Handoffs); diff != "" {
				t.Errorf("handoffs (-want +got):\n%s", diff)
			}
			if tc.want.handoffs == nil {
				if diff := cmp.Diff(orEmpty(tc.want.ownership), o.Ownership); diff != "" {
					t.Errorf("ownership (-want +got):\n%s", diff)
				}
			}
			// The text and markdown renderings must not leak either.
			for _, format := range []string{"text", "markdown"} {
				r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", format)
				if r.code != tc.want.code {
					t.Errorf("-o %s: exit code %d, want %d\n%s%s", format, r.code, tc.want.code, r.stdout, r.stderr)
				}
				for _, s := range tc.want.noDiff {
					if strings.Contains(r.stdout+o.Diff, s) {
						t.Errorf("-o %s output contains %q:\n%s", format, s, r.stdout)
					}
				}
			}
			if diff := cmp.Diff(before, resourceVersions(t, ns)); diff != "" {
				t.Errorf("plan wrote to the cluster: resourceVersions (-before +after):\n%s", diff)
			}
			if tc.live == nil {
				_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), tc.name, metav1.GetOptions{})
				if !apierrors.IsNotFound(err) {
					t.Errorf("plan created %s (get error %v)", tc.name, err)
				}
			}
		})
	}
}

func orEmpty[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

// editColor changes .data.color of ConfigMap cfg to red as the manager
// kubectl-edit (an Update, like kubectl edit).
func editColor(t *testing.T, ns string) {
	t.Helper()
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "cfg", types.MergePatchType,
		[]byte(`{"data":{"color":"red"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
}

// TestPlanMarkdownManyObjects: a preview of many changed objects stays
// under GitHub's comment limit and says how many objects it left out.
func TestPlanMarkdownManyObjects(t *testing.T) {
	ns := env.Namespace(t)
	cfg := planConfig(t, ns, "")
	files := map[string]string{}
	pad := strings.Repeat("x", 60)
	for i := range 150 {
		var data strings.Builder
		for k := range 8 {
			fmt.Fprintf(&data, "  key%d: %s-%d\n", k, pad, i)
		}
		files[fmt.Sprintf("cm-%03d.yaml", i)] = cmYAML(fmt.Sprintf("cm-%03d", i), data.String())
	}
	r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", writeFiles(t, files), "-o", "markdown")
	if r.code != exitChanges {
		t.Fatalf("code %d, want %d\n%s", r.code, exitChanges, r.stderr)
	}
	if n := len([]rune(r.stdout)); n > preview.MarkdownBudget {
		t.Errorf("markdown is %d characters, over the budget %d", n, preview.MarkdownBudget)
	}
	shown := strings.Count(r.stdout, "<details>")
	if shown == 0 || shown >= 150 {
		t.Fatalf("%d objects shown, want some but not all 150", shown)
	}
	if !strings.Contains(r.stdout, fmt.Sprintf("%d more changed object(s) not shown", 150-shown)) {
		t.Errorf("no truncation note counting the %d objects left out:\n%s", 150-shown, r.stdout[len(r.stdout)-500:])
	}
	if !strings.Contains(r.stdout, "| 150 | 0 | 0 |") {
		t.Errorf("summary table does not count 150 creates:\n%s", r.stdout[:400])
	}
}

// TestPlanPRComment prints, with -v, the markdown of a realistic pull
// request (docs/preview.md shows it): a changed ConfigMap, a Secret, a
// Deployment that stops setting replicas, a new object and a conflict.
func TestPlanPRComment(t *testing.T) {
	ns := env.Namespace(t)
	cfg := planConfig(t, ns, "")
	applyApp(t, cfg, map[string]string{
		"cm.yaml":     cmYAML("cfg", "  color: blue\n  size: small\n"),
		"flags.yaml":  cmYAML("flags", "  beta: \"false\"\n"),
		"secret.yaml": secretYAML("s3cr3t-old"),
		"deploy.yaml": deployYAML("  replicas: 3\n"),
	})
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "flags", types.MergePatchType,
		[]byte(`{"data":{"beta":"true"}}`), metav1.PatchOptions{FieldManager: "kubectl-edit"})
	if err != nil {
		t.Fatal(err)
	}
	before := resourceVersions(t, ns)
	dir := writeFiles(t, map[string]string{
		"cm.yaml":     cmYAML("cfg", "  color: green\n  size: small\n"),
		"flags.yaml":  cmYAML("flags", "  beta: \"false\"\n  gamma: \"false\"\n"),
		"secret.yaml": secretYAML("s3cr3t-new"),
		"deploy.yaml": deployYAML(""),
		"new.yaml":    cmYAML("routes", "  home: web\n"),
	})
	r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", "markdown")
	if r.code != exitConflict {
		t.Fatalf("code %d, want %d\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
	md := strings.ReplaceAll(r.stdout, ns, "shop")
	for _, s := range []string{"s3cr3t", "Blocked by field conflicts", "`.data.beta` is owned by `kubectl-edit`: **fail**", "`.spec.replicas` is no longer set from Git", "+  color: green", "<redacted, changed>", "| 1 | 4 | 0 |"} {
		if strings.Contains(md, s) == (s == "s3cr3t") {
			t.Errorf("markdown contains %q = %v:\n%s", s, s == "s3cr3t", md)
		}
	}
	if diff := cmp.Diff(before, resourceVersions(t, ns)); diff != "" {
		t.Errorf("plan wrote to the cluster (-before +after):\n%s", diff)
	}
	t.Logf("markdown preview:\n%s", md)
	if testing.Verbose() {
		r = syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", "json")
		t.Logf("json preview:\n%s", strings.ReplaceAll(r.stdout, ns, "shop"))
	}
}

// TestPlanNewNamespace: objects in a namespace the same change creates
// cannot be dry-run (the namespace does not exist yet); they are previewed
// as created from Git instead of refused.
func TestPlanNewNamespace(t *testing.T) {
	ns := env.Namespace(t)
	cfg := planConfig(t, ns, "")
	fresh := "fresh-" + ns
	dir := writeFiles(t, map[string]string{
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + fresh + "\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: x\n  namespace: " + fresh + "\ndata:\n  a: b\n",
	})
	code, rep, stderr := planJSON(t, cfg, dir)
	if code != exitChanges {
		t.Fatalf("code %d, want %d\n%s", code, exitChanges, stderr)
	}
	got := map[string]preview.Action{}
	for _, o := range rep.Objects {
		got[o.Object.String()] = o.Action
	}
	want := map[string]preview.Action{"Namespace " + fresh: preview.Create, "ConfigMap " + fresh + "/x": preview.Create}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("actions (-want +got):\n%s", diff)
	}
	if o := findObject(t, rep, "ConfigMap", "x"); !strings.Contains(o.Diff, "+  a: b") {
		t.Errorf("the ConfigMap's diff does not show Git's content:\n%s", o.Diff)
	}
	if _, err := env.Clientset(t).CoreV1().Namespaces().Get(context.Background(), fresh, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("plan created namespace %s (get error %v)", fresh, err)
	}
}
