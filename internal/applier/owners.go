package applier

import (
	"bytes"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// ManagersAnnotationPrefix starts the annotation that lists, on every object
// an app applies, the field managers the app used for it
// ("managers.syncd.dev/<app>: syncd-web,syncd-web-release"), so that a later
// run can tell its own old managers (after a rename or a split change) from
// other people's. It is keyed by app so two apps sharing an object do not
// fight over it.
const ManagersAnnotationPrefix = "managers.syncd.dev/"

// HandoffManager returns the handoff manager of m, the manager that holds
// fields m dropped until someone else owns them: m with
// config.HandoffSuffix ("<manager>-handoff"), a suffix config reserves so
// no user manager ends in it.
func HandoffManager(m planner.FieldManager) planner.FieldManager {
	return m + config.HandoffSuffix
}

// HandoffOwner returns the manager whose handoff manager m is and true,
// or m itself and false when m is no handoff manager.
func HandoffOwner(m string) (planner.FieldManager, bool) {
	base, ok := strings.CutSuffix(m, config.HandoffSuffix)
	return planner.FieldManager(base), ok
}

// isHandoff reports whether m is a handoff manager.
func isHandoff(m string) bool {
	_, ok := HandoffOwner(m)
	return ok
}

// ownership is the live managedFields of one object, decoded.
type ownership struct {
	entries []ownerEntry
}

type ownerEntry struct {
	manager     string
	operation   metav1.ManagedFieldsOperationType
	subresource string
	set         *fieldpath.Set
}

func decodeOwnership(u *unstructured.Unstructured) ownership {
	var o ownership
	for _, e := range u.GetManagedFields() {
		set := &fieldpath.Set{}
		if e.FieldsV1 != nil {
			if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
				continue
			}
		}
		o.entries = append(o.entries, ownerEntry{manager: e.Manager, operation: e.Operation, subresource: e.Subresource, set: set})
	}
	return o
}

// applied returns the set manager m owns through Apply on the main
// resource (empty when none).
func (o ownership) applied(m planner.FieldManager) *fieldpath.Set {
	for _, e := range o.entries {
		if e.manager == string(m) && e.operation == metav1.ManagedFieldsOperationApply && e.subresource == "" {
			return e.set
		}
	}
	return fieldpath.NewSet()
}

// has reports whether m has an entry of any kind.
func (o ownership) has(m string) bool {
	for _, e := range o.entries {
		if e.manager == m {
			return true
		}
	}
	return false
}

// ownedExcept returns the union of every entry's set except those whose
// manager is in skip.
func (o ownership) ownedExcept(skip func(string) bool) *fieldpath.Set {
	out := fieldpath.NewSet()
	for _, e := range o.entries {
		if !skip(e.manager) {
			out = out.Union(e.set)
		}
	}
	return out
}

// managersAnnotation returns the annotation key for an app.
func managersAnnotation(app string) string {
	if len(app) > 63 {
		app = app[:63]
	}
	return ManagersAnnotationPrefix + app
}

// managersOf reads an app's managers annotation on a live object.
func managersOf(u *unstructured.Unstructured, app string) []planner.FieldManager {
	v := u.GetAnnotations()[managersAnnotation(app)]
	if v == "" {
		return nil
	}
	var out []planner.FieldManager
	for _, m := range strings.Split(v, ",") {
		if m = strings.TrimSpace(m); m != "" {
			out = append(out, planner.FieldManager(m))
		}
	}
	return out
}

// managerList is the annotation value for a plan object's slices.
func managerList(obj *planner.Object) string {
	names := make([]string, len(obj.Slices))
	for i, s := range obj.Slices {
		names[i] = string(s.Manager)
	}
	return strings.Join(names, ",")
}
