package inventory

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/planner"
)

// Reserved tells syncd's own objects from everybody else's. No app may
// create, change or delete them, whatever its manifests, its conflict
// policy and RBAC say: the render of an app that declares one is refused
// before anything is sent (reconcile), and prune never deletes one.
type Reserved struct {
	// Namespaces are syncd's own: where its Deployment, config ConfigMap,
	// credentials Secrets and Lease live ($POD_NAMESPACE, the Lease's
	// namespace).
	Namespaces []string
	// InventoryNamespace holds the apps' inventory Secrets
	// (--inventory-namespace); reserved like Namespaces.
	InventoryNamespace string
}

// ReservedRule names why an object is syncd's own.
type ReservedRule string

// The rules of SyncdOwn, in the order they are checked.
const (
	// RuleInventory: an ApplySet parent (an inventory Secret, or any
	// object labelled applyset.kubernetes.io/id). Only syncd writes them;
	// installsSyncd does not lift it.
	RuleInventory ReservedRule = "inventory"
	// RuleNamespace: an object in syncd's namespace or the inventory
	// namespace, or one of those Namespaces.
	RuleNamespace ReservedRule = "namespace"
	// RuleRBAC: a ClusterRole or ClusterRoleBinding named syncd or
	// syncd-*, or a binding granting such a ClusterRole.
	RuleRBAC ReservedRule = "rbac"
	// RuleCRD: a CustomResourceDefinition of syncd's API group
	// (apps.syncd.dev, gitsources.syncd.dev, ...): deleting one deletes
	// every object of its kind in the cluster, and editing one removes
	// the admission rules (no file URL, ...) the controller relies on.
	RuleCRD ReservedRule = "crd"
	// RuleLabel: an object labelled app.kubernetes.io/name: syncd or
	// app.kubernetes.io/part-of: syncd (syncd's install labels all of its
	// objects so).
	RuleLabel ReservedRule = "label"
)

// Target is what SyncdOwn reads of an object: from a manifest, or from
// the live metadata prune reads.
type Target struct {
	Ref    planner.ObjectRef
	Labels map[string]string
	// RoleRef is the ClusterRole a RoleBinding or ClusterRoleBinding
	// grants ("" when it grants a Role, or is not a binding, or is not
	// known).
	RoleRef string
	// InstallsSyncd is the app's installsSyncd: every rule but
	// RuleInventory is lifted.
	InstallsSyncd bool
}

// ReservedError is an object an app may not write, with the rule that
// reserves it.
type ReservedError struct {
	App    string
	Object planner.ObjectRef
	Origin string // "file#doc" of the manifest; empty for a live object
	Rule   ReservedRule
	Why    string // what makes it syncd's own
	// AppObject says the app is an App object (inventory.App.Owner is
	// set), which cannot set installsSyncd: the error does not offer it.
	AppObject bool
}

// Error names the object, why it is syncd's own and what to do.
func (e *ReservedError) Error() string {
	var b strings.Builder
	if e.Origin != "" {
		b.WriteString(e.Origin + ": ")
	}
	fmt.Fprintf(&b, "%s is syncd's own object (%s): no app may create, change or delete it; remove it from app %s's manifests", e.Object, e.Why, e.App)
	switch {
	case e.Rule == RuleInventory:
	case e.AppObject:
		b.WriteString(" (an App object cannot install syncd; only an app of the syncd config file with installsSyncd: true may)")
	default:
		fmt.Fprintf(&b, ", or, if app %s installs syncd itself, set installsSyncd: true on it in the syncd config", e.App)
	}
	return b.String()
}

// ReservedErrors is every syncd-owned object of one render; nothing of it
// is applied.
type ReservedErrors []*ReservedError

// Error implements error, one object a line.
func (es ReservedErrors) Error() string {
	lines := make([]string, len(es))
	for i, e := range es {
		lines[i] = e.Error()
	}
	return fmt.Sprintf("refused, nothing applied: %d object(s) are syncd's own (see docs/security.md):\n%s", len(es), strings.Join(lines, "\n"))
}

// Unwrap returns each refusal.
func (es ReservedErrors) Unwrap() []error {
	out := make([]error, len(es))
	for i, e := range es {
		out[i] = e
	}
	return out
}

// Labels syncd's install puts on its objects (manifests/kustomization.yaml).
const (
	labelName   = "app.kubernetes.io/name"
	labelPartOf = "app.kubernetes.io/part-of"
)

const rbacGroup = "rbac.authorization.k8s.io"

// syncdGroup is the API group of syncd's custom resources (App,
// GitSource, ...); its CRDs are named <plural>.syncd.dev.
const syncdGroup = "syncd.dev"

// crdGroup is the API group of the CustomResourceDefinition named name
// (<plural>.<group>): widgets.e2e.syncd.dev is of group e2e.syncd.dev,
// not syncd's.
func crdGroup(name string) string {
	_, group, _ := strings.Cut(name, ".")
	return group
}

// labelAggregateToManager on a ClusterRole adds its rules to syncd's
// aggregated ClusterRole syncd-manager (manifests/manager-clusterrole.yaml).
const labelAggregateToManager = "syncd.dev/aggregate-to-manager"

// SyncdOwn decides whether t is one of syncd's own objects, returning the
// rule and what makes it so; "" when it is not. It covers:
//   - ApplySet parents: a core Secret named syncd-applyset-* (an app's
//     inventory, in any namespace) or any object labelled
//     applyset.kubernetes.io/id; never lifted, as syncd writes an app's
//     own parent itself, never through the app's manifests;
//   - every namespaced object in Namespaces or InventoryNamespace (config,
//     credentials, inventory Secrets, Leases, syncd's Deployment, RBAC)
//     and those Namespace objects;
//   - ClusterRoles and ClusterRoleBindings named "syncd" or "syncd-*"
//     (all of manifests/'s), any RoleBinding or ClusterRoleBinding
//     granting such a ClusterRole (it would hand out syncd's powers), and
//     any ClusterRole labelled syncd.dev/aggregate-to-manager (its rules
//     would become syncd's);
//   - the CustomResourceDefinitions of group syncd.dev (syncd's own API);
//   - objects labelled app.kubernetes.io/name: syncd or
//     app.kubernetes.io/part-of: syncd.
//
// With t.InstallsSyncd only the first rule holds. It does not cover
// objects of syncd's install outside those namespaces that are not named
// syncd* and whose manifest does not carry the labels (the decision reads
// what the app declares, not the live object, before an apply), nor
// webhook configurations, other groups' CRDs or priority classes (syncd
// installs none).
func (r Reserved) SyncdOwn(t Target) (ReservedRule, string) {
	ref := t.Ref
	switch {
	case ref.Group == "" && ref.Kind == "Secret" && strings.HasPrefix(ref.Name, ParentPrefix):
		return RuleInventory, fmt.Sprintf("a Secret named %s* is an app's inventory, written only by syncd", ParentPrefix)
	case t.Labels[LabelID] != "":
		return RuleInventory, fmt.Sprintf("it is labelled %s: an ApplySet parent, written only by syncd", LabelID)
	case t.InstallsSyncd:
		return "", ""
	}
	if ns := r.reservedNamespace(ref); ns != "" {
		if ref.Group == "" && ref.Kind == "Namespace" {
			return RuleNamespace, fmt.Sprintf("namespace %s is %s", ns, r.namespaceRole(ns))
		}
		return RuleNamespace, fmt.Sprintf("it is in namespace %s, %s", ns, r.namespaceRole(ns))
	}
	if ref.Group == rbacGroup && (ref.Kind == "ClusterRole" || ref.Kind == "ClusterRoleBinding") && syncdName(ref.Name) {
		return RuleRBAC, fmt.Sprintf("a %s named syncd or syncd-* is syncd's own RBAC", ref.Kind)
	}
	if ref.Group == rbacGroup && (ref.Kind == "RoleBinding" || ref.Kind == "ClusterRoleBinding") && syncdName(t.RoleRef) {
		return RuleRBAC, fmt.Sprintf("it grants syncd's ClusterRole %s", t.RoleRef)
	}
	if ref.Group == rbacGroup && ref.Kind == "ClusterRole" && t.Labels[labelAggregateToManager] != "" {
		return RuleRBAC, fmt.Sprintf("it is labelled %s: its rules would be added to syncd's ClusterRole syncd-manager", labelAggregateToManager)
	}
	if ref.Group == "apiextensions.k8s.io" && ref.Kind == "CustomResourceDefinition" && crdGroup(ref.Name) == syncdGroup {
		return RuleCRD, fmt.Sprintf("a CustomResourceDefinition of group %s is syncd's own API: deleting it deletes every object of its kind", syncdGroup)
	}
	for _, k := range []string{labelName, labelPartOf} {
		if t.Labels[k] == ToolName {
			return RuleLabel, fmt.Sprintf("it is labelled %s: %s", k, ToolName)
		}
	}
	return "", ""
}

// reservedNamespace returns the reserved namespace ref is in, or is.
func (r Reserved) reservedNamespace(ref planner.ObjectRef) string {
	ns := ref.Namespace
	if ref.Group == "" && ref.Kind == "Namespace" {
		ns = ref.Name
	}
	if ns != "" && (ns == r.InventoryNamespace || slices.Contains(r.Namespaces, ns)) {
		return ns
	}
	return ""
}

func (r Reserved) namespaceRole(ns string) string {
	switch {
	case slices.Contains(r.Namespaces, ns) && ns == r.InventoryNamespace:
		return "syncd's namespace and the inventory namespace"
	case ns == r.InventoryNamespace:
		return "the inventory namespace"
	}
	return "syncd's namespace"
}

// syncdName is a name of syncd's cluster-wide RBAC.
func syncdName(name string) bool {
	return name == ToolName || strings.HasPrefix(name, ToolName+"-")
}

// Refuse returns a ReservedErrors listing every object of the plan that is
// syncd's own for app, nil when there is none.
func (r Reserved) Refuse(app App, plan *planner.Plan) error {
	var errs ReservedErrors
	for i := range plan.Objects {
		obj := &plan.Objects[i]
		t := TargetOf(obj.Desired)
		t.InstallsSyncd = app.InstallsSyncd
		if rule, why := r.SyncdOwn(t); rule != "" {
			errs = append(errs, &ReservedError{App: app.Name, Object: obj.Ref, Origin: obj.Origin, Rule: rule, Why: why, AppObject: app.Owner != ""})
		}
	}
	if len(errs) == 0 {
		return nil
	}
	return errs
}

// TargetOf reads a manifest's ref, labels and the ClusterRole a binding
// grants.
func TargetOf(obj *unstructured.Unstructured) Target {
	t := Target{Ref: planner.RefOf(obj), Labels: obj.GetLabels()}
	if t.Ref.Group == rbacGroup && strings.HasSuffix(t.Ref.Kind, "Binding") {
		kind, _, _ := unstructured.NestedString(obj.Object, "roleRef", "kind")
		name, _, _ := unstructured.NestedString(obj.Object, "roleRef", "name")
		if kind == "ClusterRole" {
			t.RoleRef = name
		}
	}
	return t
}
