package planner

import (
	"fmt"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/typed"

	"syncd.dev/syncd/internal/redact"
)

// FieldManager is a field manager name. It is a value type passed along
// from the config, never a string literal repeated at call sites.
type FieldManager string

// String returns the manager name.
func (m FieldManager) String() string { return string(m) }

// Stage is an apply stage. Objects of an earlier stage are applied before
// objects of a later one, so that what a later object needs (its CRD, its
// namespace, the RBAC it runs under) exists first.
type Stage int

// Apply stages, in order.
const (
	// StageCRDs holds CustomResourceDefinitions.
	StageCRDs Stage = iota
	// StageNamespaces holds Namespaces.
	StageNamespaces
	// StageCluster holds the other cluster-scoped objects: RBAC roles and
	// bindings, classes (StorageClass, IngressClass, PriorityClass, ...)
	// and any other cluster-scoped kind.
	StageCluster
	// StageNamespaced holds every namespaced object.
	StageNamespaced
)

// String returns the stage name.
func (s Stage) String() string {
	switch s {
	case StageCRDs:
		return "crds"
	case StageNamespaces:
		return "namespaces"
	case StageCluster:
		return "cluster"
	case StageNamespaced:
		return "namespaced"
	case StageHooksBefore:
		return "hooks-before"
	case StageHooksAfter:
		return "hooks-after"
	}
	return fmt.Sprintf("Stage(%d)", int(s))
}

// ObjectRef identifies one object.
type ObjectRef struct {
	Group, Version, Kind, Namespace, Name string
}

// String returns "apps/Deployment ns/name" ("ConfigMap ns/name" for the core
// group, "rbac.authorization.k8s.io/ClusterRole name" for cluster-scoped
// objects).
func (r ObjectRef) String() string {
	kind := r.Kind
	if r.Group != "" {
		kind = r.Group + "/" + r.Kind
	}
	return KindName(kind, r.Namespace, r.Name)
}

// KindName returns "kind namespace/name" ("kind name" when namespace is
// empty): how every report names an object, with kind as the report
// spells it (ObjectRef.String prefixes the group, the JSON reports do
// not).
func KindName(kind, namespace, name string) string {
	if namespace == "" {
		return kind + " " + name
	}
	return kind + " " + namespace + "/" + name
}

// GroupKind returns the object's group and kind.
func (r ObjectRef) GroupKind() schema.GroupKind {
	return schema.GroupKind{Group: r.Group, Kind: r.Kind}
}

// GVK returns the object's group, version and kind.
func (r ObjectRef) GVK() schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: r.Group, Version: r.Version, Kind: r.Kind}
}

// Less orders refs by group, kind, namespace and name (the version is not
// part of an object's identity).
func (r ObjectRef) Less(o ObjectRef) bool {
	if r.Group != o.Group {
		return r.Group < o.Group
	}
	if r.Kind != o.Kind {
		return r.Kind < o.Kind
	}
	if r.Namespace != o.Namespace {
		return r.Namespace < o.Namespace
	}
	return r.Name < o.Name
}

// RefOf returns the ref of an object as written.
func RefOf(obj *unstructured.Unstructured) ObjectRef {
	gvk := obj.GroupVersionKind()
	return ObjectRef{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: obj.GetNamespace(), Name: obj.GetName()}
}

// Slice is one manager's apply configuration for one object.
type Slice struct {
	// Manager applies this slice.
	Manager FieldManager
	// Object is the apply configuration: apiVersion, kind,
	// metadata.name/namespace and exactly this manager's fields, with the
	// keys of associative-list items kept so that items merge.
	Object *unstructured.Unstructured
	// Fields is the set of fields the API server records for Manager after
	// applying Object: the ToFieldSet of Object without apiVersion, kind,
	// metadata.name and metadata.namespace (the server strips those from
	// managedFields). Key fields of list items appear in every slice that
	// holds a field of the item: they are shared.
	Fields *fieldpath.Set
	// Hash is the hex sha256 of the canonical JSON of Object; it is stable
	// across runs and processes.
	Hash string
}

// Object is one object of a plan.
type Object struct {
	Ref    ObjectRef
	Stage  Stage
	Origin string // "file#doc", where errors and reports point
	// Desired is the full rendered object after namespace defaulting and
	// stripping of server-set fields.
	Desired *unstructured.Unstructured
	// Slices holds the default manager's slice first, then split managers'
	// in config order. A manager with no fields on this object gets no
	// slice, except that an object with no fields besides its identity
	// (a bare Namespace) gets one identity-only slice for the default
	// manager so that it is still applied.
	Slices []Slice
	// typ is the schema and type Desired was typed with (the cluster's
	// schema, the built-in one, or a deduced one), shared by the plan's
	// objects of one type: Typed makes the typed value from it when
	// asked, so the plan holds no typed value per object.
	typ *typed.ParseableType

	// decrypted are the paths of Desired's fields whose values were
	// decrypted (SOPS) by the render.
	decrypted []fieldpath.Path

	// deduced is true when typ is structured-merge-diff's deduced
	// type (no schema known): it cannot be cut into parts.
	deduced bool
}

// Warning is something the planner fixed or could not check, that a user
// should know about. It does not stop the plan.
type Warning struct {
	Object  string `json:"object,omitempty"` // an ObjectRef string and origin; empty for app-wide warnings
	Message string `json:"message"`
}

// String returns "object: message".
func (w Warning) String() string {
	if w.Object == "" {
		return w.Message
	}
	return w.Object + ": " + w.Message
}

// Plan is everything one app wants applied at one revision.
type Plan struct {
	App      string
	Revision string
	// Objects are in apply order: by Stage, then by group, kind,
	// namespace and name.
	Objects  []Object
	Warnings []Warning
	// Decrypted are the fields, by kind, that hold values the render
	// decrypted (SOPS): every output hides them, whatever the kind
	// (Sensitive).
	Decrypted []redact.Field

	// redactor hides sensitive fields in WriteYAML and WriteJSON.
	redactor *redact.Rules
	// secrets are the values every output masks wherever they appear
	// (knownSecrets).
	secrets *redact.Secrets
}
