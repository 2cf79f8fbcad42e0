package planner

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// A kustomization's namespace field on a cluster-scoped custom kind.
//
// kustomize's namespace transformer leaves the cluster-scoped kinds it
// knows (its built-in schema's) alone, but it cannot know a custom kind's
// scope, so it sets the namespace on every custom object, as kubectl
// kustomize does; the API server ignores it on a cluster-scoped kind. An
// overlay with namespace: listing a GatewayClass, a cert-manager
// ClusterIssuer or a CRD-defined cluster-scoped kind is normal, and is
// not refused.
//
// The rule: an object of a kustomize build whose metadata.namespace equals
// the namespace: of a kustomization in that build has that namespace
// marked as set by the kustomization (the render adds
// kustomizeNamespaceAnnotation, naming the kustomization file). When the
// planner finds the kind cluster-scoped (from a CRD of the render or the
// cluster, as for any object), it drops a marked namespace with a warning
// naming the kustomization and the object. Any other namespace on a
// cluster-scoped object is refused, as before: one written in a plain
// manifest file, or in a file of a kustomize build that is not the
// namespace: of a kustomization of the build (that one is the author's,
// and "delete metadata.namespace" is the right advice). A namespace a
// file of the build writes that happens to equal a kustomization's
// namespace: is dropped too: the two cannot be told apart from the
// output, and either way the API server would ignore it.

// kustomizeNamespaceAnnotation marks an object of a kustomize build whose
// metadata.namespace is the namespace: of a kustomization in the build;
// its value is that kustomization's file. It is syncd's own: the render
// adds it and the planner takes it off every object before checking it
// (takeKustomizeNamespace), so it is never applied or shown.
const kustomizeNamespaceAnnotation = "render.syncd.dev/kustomize-namespace"

// namespaceSetters maps each namespace the kustomizations of a build set
// (their namespace: field) to the first kustomization setting it, from
// the top: the one whose namespace transformer runs last on the objects
// below it.
type namespaceSetters map[string]string

// note records that the kustomization file sets namespace ns ("": none).
func (s namespaceSetters) note(ns, file string) {
	if ns == "" {
		return
	}
	if _, ok := s[ns]; !ok {
		s[ns] = repoRel(file)
	}
}

// markSetNamespace marks obj's namespace as set by a kustomization of the
// build when it is one the kustomizations set, and removes a mark the
// object carried in from its file.
func markSetNamespace(obj *unstructured.Unstructured, setters namespaceSetters) {
	takeKustomizeNamespace(obj)
	file, ok := setters[obj.GetNamespace()]
	if !ok {
		return
	}
	ann := obj.GetAnnotations()
	if ann == nil {
		ann = map[string]string{}
	}
	ann[kustomizeNamespaceAnnotation] = file
	obj.SetAnnotations(ann)
}

// takeKustomizeNamespace removes the mark markSetNamespace left on obj and
// returns the kustomization file it named ("" when there was none).
// metadata.annotations goes too when the mark was all it held.
func takeKustomizeNamespace(obj *unstructured.Unstructured) string {
	md, _ := obj.Object["metadata"].(map[string]any)
	ann, _ := md["annotations"].(map[string]any)
	v, found := ann[kustomizeNamespaceAnnotation]
	if !found {
		return ""
	}
	delete(ann, kustomizeNamespaceAnnotation)
	if len(ann) == 0 {
		delete(md, "annotations")
	}
	file, _ := v.(string)
	return file
}

// dropSetNamespace removes from a cluster-scoped object the namespace the
// kustomization setBy set, and returns the warning that says so.
func dropSetNamespace(obj *unstructured.Unstructured, setBy string) string {
	ns := obj.GetNamespace()
	unstructured.RemoveNestedField(obj.Object, "metadata", "namespace")
	return fmt.Sprintf("%s is cluster-scoped: metadata.namespace %q, set by the namespace field of %s, was dropped "+
		"(kustomize cannot know a custom kind's scope; the API server would ignore it); "+
		"to silence this warning, list the object in a kustomization that sets no namespace",
		obj.GetKind(), ns, setBy)
}
