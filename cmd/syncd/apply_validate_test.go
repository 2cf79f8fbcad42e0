package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// refusedFiles are the five inputs a new user's bad commit had that the
// API server refuses, each with the object's line and a fragment of the
// server's reason; the values they carry must never be printed.
var refusedFiles = []struct {
	file, doc, object, reason string
}{
	{"label.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-label\n  labels:\n    tier: \"not a label value!\"\ndata:\n  k: v\n",
		"ConfigMap %s/bad-label failed", "metadata.labels: Invalid value"},
	{"selector.yaml", "apiVersion: apps/v1\nkind: Deployment\nmetadata:\n  name: no-selector\nspec:\n  template:\n    metadata:\n      labels:\n        app: x\n    spec:\n      containers:\n      - name: app\n        image: nginx:1.27\n",
		"apps/Deployment %s/no-selector failed", "spec.selector: Required value"},
	{"secret.yaml", "apiVersion: v1\nkind: Secret\nmetadata:\n  name: not-base64\ndata:\n  password: \"hunter2!!\"\n",
		"Secret %s/not-base64 failed", "illegal base64 data"},
	{"name.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: Bad_Name\ndata:\n  k: v\n",
		"ConfigMap %s/Bad_Name failed", "metadata.name: Invalid value"},
	{"elsewhere.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: elsewhere\n  namespace: no-such-namespace-syncd\ndata:\n  k: v\n",
		"ConfigMap no-such-namespace-syncd/elsewhere failed", `namespaces "no-such-namespace-syncd" not found`},
}

// TestApplyRefusedStage: `syncd apply --config` with the five refused
// inputs beside valid objects of the same stage writes none of them,
// names every refused object with the server's reason (values scrubbed)
// and exits 1; with validate: false the valid objects are created and the
// refused ones still fail (exit 1).
func TestApplyRefusedStage(t *testing.T) {
	tests := map[string]struct {
		validate string
		wantGood string
	}{
		"validated":      {wantGood: "skipped"},
		"validate false": {validate: "  validate: false\n", wantGood: "created"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n%s", ns, tc.validate))
			files := map[string]string{
				"good.yaml":   "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: good\ndata:\n  k: v\n",
				"secret.yaml": "apiVersion: v1\nkind: Secret\nmetadata:\n  name: good-secret\nstringData:\n  token: s3cr3t-value\n",
			}
			for _, f := range refusedFiles {
				files["bad-"+f.file] = f.doc
			}
			r := syncd(t, "apply", "--config", cfg, "--path", writeFiles(t, files))
			t.Logf("output:\n%s%s", r.stdout, r.stderr)
			if r.code != exitError {
				t.Errorf("code %d, want %d", r.code, exitError)
			}
			want := []string{"ConfigMap " + ns + "/good " + tc.wantGood, "Secret " + ns + "/good-secret " + tc.wantGood}
			for _, f := range refusedFiles {
				object := f.object
				if strings.Contains(object, "%s") {
					object = fmt.Sprintf(object, ns)
				}
				want = append(want, object, f.reason)
			}
			if tc.validate == "" {
				want = append(want, "nothing of stage namespaced or of later stages was applied")
			}
			for _, w := range want {
				if !strings.Contains(r.stdout, w) {
					t.Errorf("output lacks %q", w)
				}
			}
			for _, value := range []string{"hunter2!!", "not a label value!", "s3cr3t-value"} {
				if strings.Contains(r.stdout+r.stderr, value) {
					t.Errorf("output shows the value %q", value)
				}
			}
			_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "good", metav1.GetOptions{})
			switch {
			case tc.validate == "" && !apierrors.IsNotFound(err):
				t.Errorf("ConfigMap good of a refused stage: get err = %v, want NotFound", err)
			case tc.validate != "" && err != nil:
				t.Errorf("ConfigMap good with validate: false: %v", err)
			}
		})
	}
}

// TestApplyNamespaceAndObjectsValidated: an app that creates its namespace
// and objects in it is applied in one `syncd apply` with validation on:
// the namespaced stage is validated after the namespace exists.
func TestApplyNamespaceAndObjectsValidated(t *testing.T) {
	ns := env.Namespace(t) + "-own"
	t.Cleanup(func() {
		_ = env.Clientset(t).CoreV1().Namespaces().Delete(context.Background(), ns, metav1.DeleteOptions{})
	})
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n", ns))
	dir := writeFiles(t, map[string]string{
		"ns.yaml": "apiVersion: v1\nkind: Namespace\nmetadata:\n  name: " + ns + "\n",
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n",
	})
	r := syncd(t, "apply", "--config", cfg, "--path", dir)
	t.Logf("output:\n%s%s", r.stdout, r.stderr)
	if r.code != exitOK {
		t.Fatalf("code %d, want %d", r.code, exitOK)
	}
	for _, w := range []string{"Namespace " + ns + " created", "ConfigMap " + ns + "/cfg created"} {
		if !strings.Contains(r.stdout, w) {
			t.Errorf("output lacks %q", w)
		}
	}
}

// TestApplyWaitTimeout: wait: true with timeout: 3s on a Deployment that
// never becomes Current (the test control plane runs no scheduler) ends at
// the app's timeout, says how long it really waited and exits 1; applied
// again, the unchanged ConfigMap beside it is skipped as unchanged and
// reported Current.
func TestApplyWaitTimeout(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n  wait: true\n  timeout: 3s\n", ns))
	dir := writeFiles(t, map[string]string{
		"cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: cfg\ndata:\n  k: v\n",
		"deploy.yaml": `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
spec:
  replicas: 1
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: nginx:1.27
`,
	})
	for _, step := range []struct {
		name string
		want []string
	}{
		{"first", []string{"ConfigMap " + ns + "/cfg created", "  health: Current", "apps/Deployment " + ns + "/web created",
			"  health: InProgress: apps/Deployment " + ns + "/web: not Current after waiting 3s (status InProgress: ",
			"1 object(s) applied but not healthy"}},
		{"again", []string{"ConfigMap " + ns + "/cfg unchanged\n  health: Current", "not Current after waiting 3s"}},
	} {
		r := syncd(t, "apply", "--config", cfg, "--path", dir)
		t.Logf("%s apply:\n%s%s", step.name, r.stdout, r.stderr)
		if r.code != exitError {
			t.Errorf("%s apply: code %d, want %d", step.name, r.code, exitError)
		}
		for _, w := range step.want {
			if !strings.Contains(r.stdout+r.stderr, w) {
				t.Errorf("%s apply: output lacks %q", step.name, w)
			}
		}
	}
}
