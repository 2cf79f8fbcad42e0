package planner

import (
	"errors"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// sanitize checks an object for what must never be applied and strips
// server-set noise. It refuses (returns an error) for:
//   - a missing apiVersion, kind or metadata.name;
//   - metadata.managedFields (the API server rejects it in an apply);
//   - metadata.resourceVersion and metadata.uid: with either, an apply
//     becomes an optimistic-lock write that fails once the live object
//     changes, which is never what a GitOps manifest means.
//
// It strips null metadata.labels and metadata.annotations (see
// dropNullMetadata) and, with a warning, metadata.creationTimestamp (silently when it
// is null, as kubectl --dry-run writes it), metadata.generation,
// metadata.selfLink, metadata.deletionTimestamp and
// metadata.deletionGracePeriodSeconds: the server sets them and ignores
// them in an apply. Status is handled by the caller, which knows whether
// the kind has a status subresource.
func sanitize(obj *unstructured.Unstructured) (warnings []string, err error) {
	switch {
	case obj.GetAPIVersion() == "":
		return nil, errors.New("apiVersion is missing: add apiVersion (e.g. v1, apps/v1)")
	case obj.GetKind() == "":
		return nil, errors.New("kind is missing: add kind (e.g. ConfigMap, Deployment)")
	case obj.GetName() == "":
		return nil, errors.New("metadata.name is missing: add metadata.name")
	}
	md, _ := obj.Object["metadata"].(map[string]any)
	if _, found := md["managedFields"]; found {
		return nil, errors.New("metadata.managedFields must not be in Git: it records live ownership and the API server rejects it in apply requests; delete the field")
	}
	if v, found := md["resourceVersion"]; found && !isEmpty(v) {
		return nil, errors.New("metadata.resourceVersion must not be in Git: it turns every apply into an optimistic-lock write that fails as soon as the live object changes; delete the field")
	}
	if v, found := md["uid"]; found && !isEmpty(v) {
		return nil, errors.New("metadata.uid must not be in Git: it pins the apply to one incarnation of the object and fails after a re-create; delete the field")
	}
	for _, f := range []string{"resourceVersion", "uid"} {
		delete(md, f) // empty values only, after the checks above
	}
	dropNullMetadata(md)
	for _, f := range []string{"creationTimestamp", "generation", "selfLink", "deletionTimestamp", "deletionGracePeriodSeconds"} {
		v, found := md[f]
		if !found {
			continue
		}
		if !isEmpty(v) {
			warnings = append(warnings, "metadata."+f+" is set by the API server and was removed from the apply configuration; delete it from Git")
		}
		delete(md, f)
	}
	return warnings, nil
}

// dropNullMetadata removes metadata.labels and metadata.annotations that
// are null. A chart renders them so when every line under "annotations:"
// is behind an if that is false (kube-state-metrics' Service,
// kube-prometheus-stack's webhook configurations). The API server reads
// null as none, and so must syncd: kept, the null would claim the whole
// map, so the labels and annotations syncd adds there (the inventory's,
// the managers annotation) would show as drift after every apply.
func dropNullMetadata(md map[string]any) {
	for _, f := range []string{"labels", "annotations"} {
		if v, found := md[f]; found && v == nil {
			delete(md, f)
		}
	}
}

// isEmpty reports whether a decoded JSON value is null, "", or an empty
// map or list.
func isEmpty(v any) bool {
	switch x := v.(type) {
	case nil:
		return true
	case string:
		return x == ""
	case map[string]any:
		return len(x) == 0
	case []any:
		return len(x) == 0
	}
	return false
}
