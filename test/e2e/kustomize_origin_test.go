package e2e

import (
	"encoding/json"
	"path/filepath"
	"strings"
	"testing"
)

// TestJourneyKustomizeNamespaceAndOrigins: the hand trial's two
// repositories, through the built binary.
//
// An app whose kustomization sets namespace: and lists a CRD of a
// cluster-scoped kind, an object of it and a ValidatingAdmissionPolicy
// renders, each object's origin naming its file; the namespace kustomize
// set on the custom object is dropped with a warning naming the
// kustomization, and the apply creates the object on the API server.
//
// An overlay of a base holding a ConfigMap with a key given twice fails
// naming the base's file and the object, not the overlay and a position
// in kustomize's output.
func TestJourneyKustomizeNamespaceAndOrigins(t *testing.T) {
	w := newWorkspace(t)
	w.file(".git/HEAD", "ref: refs/heads/main\n")
	w.file("app/kustomization.yaml", "namespace: team-a\nresources: [crd.yaml, widgets.yaml, vap.yaml]\n")
	w.file("app/crd.yaml", `apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: kustwidgets.e2e.example.com}
spec:
  group: e2e.example.com
  names: {kind: KustWidget, plural: kustwidgets, singular: kustwidget, listKind: KustWidgetList}
  scope: Cluster
  versions:
  - name: v1
    served: true
    storage: true
    schema: {openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}}
`)
	w.file("app/widgets.yaml", "apiVersion: e2e.example.com/v1\nkind: KustWidget\nmetadata: {name: kust-w1}\nspec: {size: 3}\n")
	w.file("app/vap.yaml", "apiVersion: admissionregistration.k8s.io/v1\nkind: ValidatingAdmissionPolicy\nmetadata: {name: kust-p1}\n"+
		"spec:\n  failurePolicy: Fail\n  matchConstraints: {resourceRules: [{apiGroups: [e2e.example.com], apiVersions: [v1], operations: [CREATE], resources: [kustwidgets]}]}\n"+
		"  validations: [{expression: \"true\"}]\n")
	w.file("base/kustomization.yaml", "resources: [a.yaml, b.yaml]\n")
	w.file("base/a.yaml", "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\ndata: {k: v}\n")
	w.file("base/b.yaml", "# header\n# header\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b\ndata:\n  color: blue\n  color: red\n")
	w.file("overlays/prod/kustomization.yaml", "resources: [../../base]\n")
	w.writeConfig(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - {name: repo, git: {url: "file:///nowhere", branch: main, interval: 1m}}
apps:
  - {name: widgets, source: repo, path: app}
  - {name: dup, source: repo, path: overlays/prod, namespace: default}
`)
	t.Cleanup(func() {
		_, _ = kubectl("delete", "--ignore-not-found", "validatingadmissionpolicy/kust-p1", "kustwidget.e2e.example.com/kust-w1", "crd/kustwidgets.e2e.example.com")
	})

	app := filepath.Join(w.dir, "app")
	r := w.must(exitOK, "render", "--config", w.config, "--app", "widgets", "--path", app, "-o", "json")
	var out struct {
		Slices []struct {
			Object string `json:"object"`
			Origin string `json:"origin"`
		} `json:"slices"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &out); err != nil {
		t.Fatalf("render -o json: %v\n%s", err, r)
	}
	origins := map[string]string{}
	for _, s := range out.Slices {
		origins[s.Object] = s.Origin
	}
	for obj, want := range map[string]string{
		"apiextensions.k8s.io/CustomResourceDefinition kustwidgets.e2e.example.com": "app/crd.yaml",
		"e2e.example.com/KustWidget kust-w1":                                        "app/widgets.yaml",
		"admissionregistration.k8s.io/ValidatingAdmissionPolicy kust-p1":            "app/vap.yaml",
	} {
		if origins[obj] != want {
			t.Errorf("origin of %s = %q, want %q\n%s", obj, origins[obj], want, r)
		}
	}
	r = w.must(exitOK, "render", "--config", w.config, "--app", "widgets", "--path", app)
	if want := `metadata.namespace "team-a", set by the namespace field of app/kustomization.yaml, was dropped`; !strings.Contains(r.stdout, want) {
		t.Errorf("render: want the warning %q\n%s", want, r)
	}
	if strings.Contains(r.stdout, "render.syncd.dev") || strings.Contains(r.stdout, "config.kubernetes.io/origin") {
		t.Errorf("render shows syncd's or kustomize's bookkeeping annotation\n%s", r)
	}

	w.must(exitOK, "apply", "--config", w.config, "--app", "widgets", "--path", app)
	got, err := kubectl("get", "kustwidget.e2e.example.com/kust-w1", "-o", "jsonpath={.metadata.name}/{.metadata.namespace}/{.spec.size} {.metadata.annotations}")
	if err != nil || !strings.HasPrefix(string(got), "kust-w1//3 ") {
		t.Errorf("the applied KustWidget: %q (%v), want kust-w1//3: no namespace", got, err)
	}
	if strings.Contains(string(got), "render.syncd.dev") || strings.Contains(string(got), "config.kubernetes.io/origin") {
		t.Errorf("the applied KustWidget carries a bookkeeping annotation: %s", got)
	}

	r = w.must(exitError, "render", "--config", w.config, "--app", "dup", "--path", filepath.Join(w.dir, "overlays", "prod"))
	want := "base/b.yaml (v1 ConfigMap b): kustomize output: yaml: unmarshal errors:\n  line 9: mapping key \"color\" already defined at line 8"
	if !strings.Contains(r.stderr, want) {
		t.Errorf("a key given twice in the base: want %q on stderr\n%s", want, r)
	}
}
