package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/preview"
)

// TestPlanNewCRDAndResource: a pull request adding a CRD and a resource
// of its kind is previewed as two creates (the resource shown as Git has
// it, since the API server cannot dry-run a kind it does not serve yet),
// exits 2, and creates neither.
func TestPlanNewCRDAndResource(t *testing.T) {
	ns := env.Namespace(t)
	group := ns + ".example.com" // cluster-scoped: unique per test
	crd := crdYAML(group, "widgets", "Widget", `
              size: {type: integer}`)
	cr := fmt.Sprintf("apiVersion: %s/v1\nkind: Widget\nmetadata: {name: w}\nspec: {size: 3}\n", group)
	cfg := planConfig(t, ns, "")
	dir := writeFiles(t, map[string]string{"crd.yaml": crd, "widget.yaml": cr})

	code, rep, stderr := planJSON(t, cfg, dir)
	if code != exitChanges {
		t.Fatalf("exit code %d, want %d\n%s", code, exitChanges, stderr)
	}
	c := findObject(t, rep, "CustomResourceDefinition", "widgets."+group)
	w := findObject(t, rep, "Widget", "w")
	if c.Action != preview.Create || w.Action != preview.Create {
		t.Errorf("actions: CRD %q (%s), Widget %q (%s); want both create", c.Action, c.Error, w.Action, w.Error)
	}
	if !strings.Contains(w.Diff, "+  size: 3") {
		t.Errorf("the Widget's diff does not show it as Git has it:\n%s", w.Diff)
	}
	_, err := dynamic.NewForConfigOrDie(env.Config).Resource(schema.GroupVersionResource{Group: "apiextensions.k8s.io", Version: "v1", Resource: "customresourcedefinitions"}).
		Get(context.Background(), "widgets."+group, metav1.GetOptions{})
	if !apierrors.IsNotFound(err) {
		t.Errorf("plan created the CRD (get error %v)", err)
	}
}

// crdYAML returns a namespaced CRD of kind in group, version v1, whose
// spec has the given properties (YAML lines indented for that place).
func crdYAML(group, plural, kind, specProperties string) string {
	return fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: %[2]s.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {plural: %[2]s, singular: %[3]s, kind: %[4]s, listKind: %[4]sList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec:
            type: object
            properties:%[5]s
`, group, plural, strings.ToLower(kind), kind, specProperties)
}
