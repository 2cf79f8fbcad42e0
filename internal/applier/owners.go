package applier

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/planner"
)

// ManagersAnnotationPrefix starts the annotation that lists, on every object
// an app applies, the field managers the app used for it
// ("managers.syncd.dev/<app>: syncd-web,syncd-web-release"), so that a later
// run can tell its own old managers (after a rename or a split change) from
// other people's. It is keyed by app so two apps sharing an object do not
// fight over it.
const ManagersAnnotationPrefix = "managers.syncd.dev/"

// HandoffManager returns the handoff manager of m (ownership.HandoffManager).
func HandoffManager(m planner.FieldManager) planner.FieldManager {
	return ownership.HandoffManager(m)
}

// HandoffOwner returns the manager whose handoff manager m is and true,
// or m itself and false when m is no handoff manager
// (ownership.HandoffOwner).
func HandoffOwner(m string) (planner.FieldManager, bool) {
	base, ok := ownership.HandoffOwner(m)
	return planner.FieldManager(base), ok
}

// isHandoff reports whether m is a handoff manager.
func isHandoff(m string) bool {
	return ownership.IsHandoff(m)
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
	return managersIn(u.GetAnnotations(), app)
}

// managersIn reads an app's managers annotation among a live object's
// annotations.
func managersIn(annotations map[string]string, app string) []planner.FieldManager {
	v := annotations[managersAnnotation(app)]
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

// DeclaringApp returns the app other than self whose managers annotation
// on live lists manager (the app that declares the fields manager owns),
// or "" when no other app does. A handoff manager is listed by no app: it
// holds fields, it declares none.
func DeclaringApp(live *unstructured.Unstructured, self, manager string) string {
	if live == nil {
		return ""
	}
	return DeclaringAppIn(live.GetAnnotations(), self, manager)
}

// DeclaringAppIn is DeclaringApp on a live object's annotations, for a
// reader that holds them without the object (the drift watcher reads the
// live cache's typed metadata in place).
func DeclaringAppIn(annotations map[string]string, self, manager string) string {
	var apps []string
	for k := range annotations {
		if !strings.HasPrefix(k, ManagersAnnotationPrefix) || k == managersAnnotation(self) {
			continue
		}
		other := strings.TrimPrefix(k, ManagersAnnotationPrefix)
		if slices.Contains(managersIn(annotations, other), planner.FieldManager(manager)) {
			apps = append(apps, other)
		}
	}
	if len(apps) == 0 {
		return ""
	}
	return slices.Min(apps)
}

// AppManagers returns the field managers app lists in its managers
// annotation on live (ManagersAnnotationPrefix): the managers whose fields
// the app declares in Git. Nil when the app has not applied live.
func AppManagers(live *unstructured.Unstructured, app string) []planner.FieldManager {
	return managersOf(live, app)
}
