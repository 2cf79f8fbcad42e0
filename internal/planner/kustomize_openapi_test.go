package planner

import (
	"context"
	"fmt"
	"path/filepath"
	"sync"
	"testing"
)

// widgetSchema is a custom OpenAPI document that makes Widget's
// spec.parts a list merged by name; without it kustomize replaces the
// list when patching.
const widgetSchema = `{"definitions": {"com.example.v1.Widget": {
  "type": "object",
  "x-kubernetes-group-version-kind": [{"group": "example.com", "version": "v1", "kind": "Widget"}],
  "properties": {"spec": {"type": "object", "properties": {"parts": {
    "type": "array", "x-kubernetes-patch-merge-key": "name", "x-kubernetes-patch-strategy": "merge",
    "items": {"type": "object", "properties": {"name": {"type": "string"}, "size": {"type": "integer"}}}}}}}}}}
`

const widget = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  parts:\n  - {name: a, size: 1}\n"

const widgetPatch = "apiVersion: example.com/v1\nkind: Widget\nmetadata: {name: w}\nspec:\n  parts:\n  - {name: b, size: 2}\n"

// TestOpenAPISchemaStaysWithItsApp checks that one app's openapi field
// changes nothing for other apps' builds, run after it or at the same
// time: kyaml keeps the schema in process-wide state.
func TestOpenAPISchemaStaysWithItsApp(t *testing.T) {
	root := writeTree(t, map[string]string{
		"widget.yaml":                  widget,
		"patch.yaml":                   widgetPatch,
		"custom/kustomization.yaml":    "resources: [../widget.yaml]\npatches:\n- path: ../patch.yaml\nopenapi:\n  path: ../schema.json\n",
		"schema.json":                  widgetSchema,
		"plain/kustomization.yaml":     "resources: [../widget.yaml]\npatches:\n- path: ../patch.yaml\n",
		"versioned/kustomization.yaml": "resources: [../widget.yaml]\npatches:\n- path: ../patch.yaml\nopenapi:\n  version: v1.21.2\n",
	})
	want := map[string]string{
		"custom":    "[map[name:b size:2] map[name:a size:1]]", // merged by name
		"plain":     "[map[name:b size:2]]",                    // replaced
		"versioned": "[map[name:b size:2]]",
	}
	build := func(app string) (string, error) {
		ms, err := Render(context.Background(), Tree{Root: root, Dir: filepath.Join(root, app)})
		if err != nil {
			return "", err
		}
		return fieldOf(ms, "Widget", "w", "spec", "parts"), nil
	}
	t.Run("in turn", func(t *testing.T) {
		for _, app := range []string{"plain", "custom", "plain", "versioned", "custom", "versioned", "plain"} {
			got, err := build(app)
			if err != nil {
				t.Fatal(err)
			}
			if got != want[app] {
				t.Errorf("%s: spec.parts = %s, want %s", app, got, want[app])
			}
		}
	})
	t.Run("at the same time", func(t *testing.T) {
		var wg sync.WaitGroup
		errs := make([]error, 24)
		for i := range errs {
			app := []string{"plain", "custom", "versioned"}[i%3]
			wg.Add(1)
			go func() {
				defer wg.Done()
				got, err := build(app)
				if err == nil && got != want[app] {
					err = fmt.Errorf("spec.parts = %s, want %s", got, want[app])
				}
				if err != nil {
					errs[i] = fmt.Errorf("%s build %d: %w", app, i, err)
				}
			}()
		}
		wg.Wait()
		for _, err := range errs {
			if err != nil {
				t.Error(err)
			}
		}
	})
}
