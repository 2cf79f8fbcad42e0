package main

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"
	"sigs.k8s.io/yaml"
)

func outcomeDeployment(ns, image, replicas string) string {
	return `apiVersion: apps/v1
kind: Deployment
metadata:
  name: web
  namespace: ` + ns + `
spec:` + replicas + `
  minReadySeconds: 0
  selector:
    matchLabels: {app: web}
  template:
    metadata:
      labels: {app: web}
    spec:
      containers:
      - name: app
        image: ` + image + `
        env:
        - name: POD
          valueFrom:
            fieldRef: {fieldPath: metadata.name}
`
}

// TestApplyOutcomeLines: taking over a Deployment that Flux last applied
// from the same manifest prints its same-value fields, exits 0 and
// changes no value; a re-apply is unchanged; a real change is configured
// and names the field.
func TestApplyOutcomeLines(t *testing.T) {
	ns := env.Namespace(t)
	doc := outcomeDeployment(ns, "nginx:1.27", "")
	j, err := yaml.YAMLToJSON([]byte(doc))
	if err != nil {
		t.Fatal(err)
	}
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	ri := dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns)
	flux, err := ri.Patch(context.Background(), "web", types.ApplyPatchType, j, metav1.PatchOptions{FieldManager: "kustomize-controller"})
	if err != nil {
		t.Fatal(err)
	}

	dir := writeFiles(t, map[string]string{"deploy.yaml": doc})
	r := syncd(t, "apply", "--path", dir, "--manager", "syncd-web")
	t.Logf("take over:\n%s%s", r.stdout, r.stderr)
	if r.code != exitOK {
		t.Fatalf("take over from kustomize-controller: code %d, want 0\n%s%s", r.code, r.stdout, r.stderr)
	}
	for _, want := range []string{
		"apps/Deployment " + ns + "/web configured\n",
		`  same value: .spec.minReadySeconds is owned by "kustomize-controller" (Apply); taken without changing the value` + "\n",
		`  same value: .spec.template.spec.containers[name="app"].env[name="POD"].valueFrom.fieldRef is owned by "kustomize-controller" (Apply); taken without changing the value` + "\n",
		"  changed: .spec.minReadySeconds (now owned), ",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q:\n%s", want, r.stdout)
		}
	}
	live, err := ri.Get(context.Background(), "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if live.GetGeneration() != flux.GetGeneration() {
		t.Errorf("generation %d -> %d: the takeover changed the spec", flux.GetGeneration(), live.GetGeneration())
	}
	spec := func(u *unstructured.Unstructured) map[string]any {
		m, _, _ := unstructured.NestedMap(u.Object, "spec")
		return m
	}
	if !equalJSON(spec(flux), spec(live)) {
		t.Errorf("the takeover changed the spec:\nbefore %v\nafter  %v", spec(flux), spec(live))
	}

	r = syncd(t, "apply", "--path", dir, "--manager", "syncd-web")
	if r.code != exitOK || !strings.Contains(r.stdout, "apps/Deployment "+ns+"/web unchanged\n") || strings.Contains(r.stdout, "changed:") {
		t.Errorf("re-apply: code %d, want 0 and unchanged with no changed line\n%s%s", r.code, r.stdout, r.stderr)
	}

	// The image is still shared with kustomize-controller: a new image is
	// a real conflict, and only it is printed.
	dir = writeFiles(t, map[string]string{"deploy.yaml": outcomeDeployment(ns, "nginx:1.28", "")})
	r = syncd(t, "apply", "--path", dir, "--manager", "syncd-web")
	t.Logf("new image:\n%s", r.stdout)
	want := "apps/Deployment " + ns + "/web conflict\n  conflict: .spec.template.spec.containers[name=\"app\"].image is owned by \"kustomize-controller\" (Apply)\n  hint:"
	if r.code != exitConflict || !strings.Contains(r.stdout, want) || strings.Contains(r.stdout, "same value") {
		t.Errorf("a new image: code %d, want %d and only %q\n%s%s", r.code, exitConflict, want, r.stdout, r.stderr)
	}

	// replicas, which nobody owns, is configured and named.
	dir = writeFiles(t, map[string]string{"deploy.yaml": outcomeDeployment(ns, "nginx:1.27", "\n  replicas: 2")})
	r = syncd(t, "apply", "--path", dir, "--manager", "syncd-web")
	t.Logf("replicas:\n%s", r.stdout)
	if want := "apps/Deployment " + ns + "/web configured\n  changed: .spec.replicas\n"; r.code != exitOK || !strings.Contains(r.stdout, want) {
		t.Errorf("a real change: code %d, want 0 and %q\n%s%s", r.code, want, r.stdout, r.stderr)
	}
}

func equalJSON(a, b any) bool {
	x, _ := yaml.Marshal(a)
	y, _ := yaml.Marshal(b)
	return string(x) == string(y)
}
