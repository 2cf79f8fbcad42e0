package v1alpha1

import (
	"os"
	"path/filepath"
	"reflect"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/yaml"
)

// crdDir holds the CRDs the types must agree with.
const crdDir = "../../../manifests/crds"

// schemaField is one property of a schema or one JSON field of a Go type:
// its path from the root and its OpenAPI type.
type schemaField struct {
	Path, Type string
}

func TestCRDsAgreeWithGoTypes(t *testing.T) {
	tests := map[string]struct {
		file string
		typ  reflect.Type
	}{
		"GitSource":     {file: "syncd.dev_gitsources.yaml", typ: reflect.TypeFor[GitSource]()},
		"App":           {file: "syncd.dev_apps.yaml", typ: reflect.TypeFor[App]()},
		"HelmSource":    {file: "syncd.dev_helmsources.yaml", typ: reflect.TypeFor[HelmSource]()},
		"OCISource":     {file: "syncd.dev_ocisources.yaml", typ: reflect.TypeFor[OCISource]()},
		"AlertProvider": {file: "syncd.dev_alertproviders.yaml", typ: reflect.TypeFor[AlertProvider]()},
		"Alert":         {file: "syncd.dev_alerts.yaml", typ: reflect.TypeFor[Alert]()},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			root := readSchema(t, tc.file)
			var fromSchema, fromGo []schemaField
			walkSchema("", root, &fromSchema, t)
			walkGo("", tc.typ, &fromGo)
			sortFields(fromSchema)
			sortFields(fromGo)
			if diff := cmp.Diff(fromGo, fromSchema); diff != "" {
				t.Errorf("%s and the Go type %s disagree (-go +schema):\n%s", tc.file, tc.typ, diff)
			}
		})
	}
}

// readSchema returns the openAPIV3Schema of the one version of a CRD file.
func readSchema(t *testing.T, file string) map[string]any {
	t.Helper()
	data, err := os.ReadFile(filepath.Join(crdDir, file))
	if err != nil {
		t.Fatal(err)
	}
	var crd struct {
		Spec struct {
			Group    string `json:"group"`
			Versions []struct {
				Name   string `json:"name"`
				Schema struct {
					OpenAPIV3Schema map[string]any `json:"openAPIV3Schema"`
				} `json:"schema"`
			} `json:"versions"`
		} `json:"spec"`
	}
	if err := yaml.Unmarshal(data, &crd); err != nil {
		t.Fatalf("%s: %v", file, err)
	}
	if crd.Spec.Group != Group || len(crd.Spec.Versions) != 1 || crd.Spec.Versions[0].Name != Version {
		t.Fatalf("%s: want group %s with the one version %s", file, Group, Version)
	}
	return crd.Spec.Versions[0].Schema.OpenAPIV3Schema
}

// walkSchema lists every property below s; it fails the test for a
// property without a description (kubectl explain shows them).
func walkSchema(path string, s map[string]any, out *[]schemaField, t *testing.T) {
	typ, _ := s["type"].(string)
	if path != "" {
		*out = append(*out, schemaField{Path: path, Type: typ})
		// kubectl explain shows an array's description for its scalar
		// items; metadata is the API server's.
		scalarItem := strings.HasSuffix(path, "[]") && typ != "object"
		if d, _ := s["description"].(string); d == "" && path != ".metadata" && !scalarItem {
			t.Errorf("schema property %s has no description", path)
		}
	}
	switch typ {
	case "object":
		props, _ := s["properties"].(map[string]any)
		for name, p := range props {
			walkSchema(path+"."+name, p.(map[string]any), out, t)
		}
	case "array":
		walkSchema(path+"[]", s["items"].(map[string]any), out, t)
	}
}

var (
	durationType = reflect.TypeFor[metav1.Duration]()
	timeType     = reflect.TypeFor[metav1.Time]()
	objectMeta   = reflect.TypeFor[metav1.ObjectMeta]()
)

// walkGo lists every JSON field below t as the schema should have it.
func walkGo(path string, t reflect.Type, out *[]schemaField) {
	if t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	typ := openAPIType(t)
	if path != "" {
		*out = append(*out, schemaField{Path: path, Type: typ})
	}
	switch {
	case t == objectMeta:
	case typ == "array":
		walkGo(path+"[]", t.Elem(), out)
	case typ == "object" && t.Kind() == reflect.Struct:
		walkGoFields(path, t, out)
	}
}

// walkGoFields lists the JSON fields of struct t below path; an
// embedded struct's fields are t's own (config.GitRef in GitSourceSpec).
func walkGoFields(path string, t reflect.Type, out *[]schemaField) {
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "" && f.Anonymous {
			if path == "" {
				walkGo(path, f.Type, out) // TypeMeta, ObjectMeta
			} else {
				walkGoFields(path, f.Type, out)
			}
			continue
		}
		if name == "-" || !f.IsExported() {
			continue
		}
		walkGo(path+"."+name, f.Type, out)
	}
}

// openAPIType is the schema type a Go type encodes as.
func openAPIType(t reflect.Type) string {
	switch {
	case t == durationType || t == timeType:
		return "string"
	case t.Kind() == reflect.String:
		return "string"
	case t.Kind() == reflect.Bool:
		return "boolean"
	case t.Kind() >= reflect.Int && t.Kind() <= reflect.Uint64:
		return "integer"
	case t.Kind() == reflect.Slice:
		return "array"
	case t.Kind() == reflect.Struct || t.Kind() == reflect.Map:
		// A map is an object with additionalProperties (or, for Helm
		// values, preserved unknown fields): no properties to walk.
		return "object"
	}
	return t.Kind().String()
}

func sortFields(fs []schemaField) {
	sort.Slice(fs, func(i, j int) bool { return fs[i].Path < fs[j].Path })
}
