package planner

import (
	"encoding/json"
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/managedfields"
	"k8s.io/kube-openapi/pkg/validation/spec"
)

var crdGK = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// renderedCRD is what the planner learns from a CustomResourceDefinition in
// the same render: the scope of its kind and, per version, its schema and
// whether status is a subresource.
type renderedCRD struct {
	origin     string
	gk         schema.GroupKind
	namespaced bool
	versions   map[string]crdVersion
}

type crdVersion struct {
	schema          map[string]any // openAPIV3Schema, nil when absent
	statusSubresour bool
}

// parseCRD reads the parts of a CRD the planner needs.
func parseCRD(obj *unstructured.Unstructured) (*renderedCRD, error) {
	group, _, _ := unstructured.NestedString(obj.Object, "spec", "group")
	kind, _, _ := unstructured.NestedString(obj.Object, "spec", "names", "kind")
	scope, _, _ := unstructured.NestedString(obj.Object, "spec", "scope")
	if group == "" || kind == "" {
		return nil, fmt.Errorf("CustomResourceDefinition needs spec.group and spec.names.kind")
	}
	if scope != "Namespaced" && scope != "Cluster" {
		return nil, fmt.Errorf("spec.scope is %q: set Namespaced or Cluster", scope)
	}
	c := &renderedCRD{gk: schema.GroupKind{Group: group, Kind: kind}, namespaced: scope == "Namespaced", versions: map[string]crdVersion{}}
	versions, _, _ := unstructured.NestedSlice(obj.Object, "spec", "versions")
	for i, v := range versions {
		vm, ok := v.(map[string]any)
		if !ok {
			return nil, fmt.Errorf("spec.versions[%d] is not an object", i)
		}
		name, _ := vm["name"].(string)
		if name == "" {
			return nil, fmt.Errorf("spec.versions[%d].name is missing", i)
		}
		var cv crdVersion
		cv.schema, _, _ = unstructured.NestedMap(vm, "schema", "openAPIV3Schema")
		_, cv.statusSubresour, _ = unstructured.NestedFieldNoCopy(vm, "subresources", "status")
		c.versions[name] = cv
	}
	return c, nil
}

// objectMetaSchema is the part of ObjectMeta an apply configuration can
// carry, with the list types the API server uses, so that CRD objects
// rendered offline get the same field sets for metadata as on the server.
const objectMetaSchema = `{
  "type": "object",
  "properties": {
    "name": {"type": "string"},
    "namespace": {"type": "string"},
    "generateName": {"type": "string"},
    "labels": {"type": "object", "additionalProperties": {"type": "string"}},
    "annotations": {"type": "object", "additionalProperties": {"type": "string"}},
    "finalizers": {"type": "array", "items": {"type": "string"}, "x-kubernetes-list-type": "set"},
    "ownerReferences": {
      "type": "array",
      "x-kubernetes-list-type": "map",
      "x-kubernetes-list-map-keys": ["uid"],
      "items": {
        "type": "object",
        "properties": {
          "apiVersion": {"type": "string"},
          "kind": {"type": "string"},
          "name": {"type": "string"},
          "uid": {"type": "string"},
          "controller": {"type": "boolean"},
          "blockOwnerDeletion": {"type": "boolean"}
        },
        "x-kubernetes-map-type": "atomic"
      }
    }
  }
}`

const objectMetaModel = "syncd.planner.ObjectMeta"

// typeConverter builds a type converter for the custom kind defined by the
// CRD, from its openAPIV3Schema. Versions without a schema are left out
// (the deduced converter handles them).
func (c *renderedCRD) typeConverter() (managedfields.TypeConverter, error) {
	models := map[string]*spec.Schema{}
	var meta spec.Schema
	if err := json.Unmarshal([]byte(objectMetaSchema), &meta); err != nil {
		return nil, fmt.Errorf("built-in ObjectMeta schema: %w", err)
	}
	models[objectMetaModel] = &meta
	{
		for version, v := range c.versions {
			if v.schema == nil {
				continue
			}
			raw, err := json.Marshal(v.schema)
			if err != nil {
				return nil, fmt.Errorf("%s: version %s: openAPIV3Schema: %w", c.origin, version, err)
			}
			var s spec.Schema
			if err := json.Unmarshal(raw, &s); err != nil {
				return nil, fmt.Errorf("%s: version %s: openAPIV3Schema: %w", c.origin, version, err)
			}
			if s.Properties == nil {
				s.Properties = map[string]spec.Schema{}
			}
			s.Properties["metadata"] = *spec.RefSchema("#/components/schemas/" + objectMetaModel)
			for _, f := range []string{"apiVersion", "kind"} {
				if _, ok := s.Properties[f]; !ok {
					s.Properties[f] = *spec.StringProperty()
				}
			}
			s.AddExtension("x-kubernetes-group-version-kind", []any{map[string]any{
				"group": c.gk.Group, "version": version, "kind": c.gk.Kind,
			}})
			models[fmt.Sprintf("syncd.planner.crd.%s.%s.%s", c.gk.Group, version, c.gk.Kind)] = &s
		}
	}
	tc, err := managedfields.NewTypeConverter(models, false)
	if err != nil {
		return nil, fmt.Errorf("%s: openAPIV3Schema: %w", c.origin, err)
	}
	return tc, nil
}
