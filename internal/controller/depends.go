package controller

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// dependencyRetry is how soon an App that waits for its dependencies
// looks again at the latest; a dependency's status change queues it at
// once (readinessChanged).
const dependencyRetry = 30 * time.Second

// dependencyWait returns why the App must wait before it is applied, or
// nil when every App of its spec.dependsOn is ready. The error names
// each App waited for and why.
func (c *Controller) dependencyWait(app *v1alpha1.App) error {
	var waits []string
	for _, name := range app.Spec.DependsOn {
		if why := c.dependencyProblem(app.Namespace, name); why != "" {
			waits = append(waits, "App "+name+" "+why)
		}
	}
	if len(waits) == 0 {
		return nil
	}
	return fmt.Errorf("App %s/%s: spec.dependsOn: not applied yet, waiting for %s", app.Namespace, app.Name, strings.Join(waits, "; "))
}

// dependencyProblem says why the App namespace/name is not ready to be
// depended on, or "".
func (c *Controller) dependencyProblem(namespace, name string) string {
	obj, err := c.apps.ByNamespace(namespace).Get(name)
	if err != nil {
		return "cannot be read (" + err.Error() + "); create it in namespace " + namespace + ", or remove it from dependsOn"
	}
	dep, err := appFrom(obj)
	if err != nil {
		return "cannot be decoded: " + err.Error()
	}
	return notReadyReason(dep)
}

// notReadyReason is why dep is not ready for its dependents: it is ready
// when its Ready condition is True for its current generation and its
// last attempt applied (lastAppliedRevision = lastAttemptedRevision).
func notReadyReason(dep *v1alpha1.App) string {
	r := meta.FindStatusCondition(dep.Status.Conditions, string(v1alpha1.ConditionReady))
	switch {
	case r == nil:
		return "has not been reconciled yet"
	case dep.Status.ObservedGeneration != dep.Generation || r.ObservedGeneration != dep.Generation:
		return fmt.Sprintf("has not reconciled generation %d yet", dep.Generation)
	case r.Status != "True":
		return "is not Ready (" + r.Reason + ")"
	case dep.Status.LastAppliedRevision != dep.Status.LastAttemptedRevision:
		return "has not applied revision " + shortRevision(dep.Status.LastAttemptedRevision) + " yet"
	}
	return ""
}

// readinessChanged reports whether an App's update changed what its
// dependents see (notReadyReason's inputs in the status).
func readinessChanged(o, n *unstructured.Unstructured) bool {
	old, err1 := appFrom(o)
	cur, err2 := appFrom(n)
	if err1 != nil || err2 != nil {
		return true
	}
	return notReadyReason(old) != notReadyReason(cur) ||
		old.Status.LastAppliedRevision != cur.Status.LastAppliedRevision
}

// enqueueDependents queues the Apps of obj's namespace whose dependsOn
// names it.
func (c *Controller) enqueueDependents(obj *unstructured.Unstructured) {
	objs, err := c.apps.ByNamespace(obj.GetNamespace()).List(everything)
	if err != nil {
		return
	}
	for _, o := range objs {
		app, err := appFrom(o)
		if err == nil && slices.Contains(app.Spec.DependsOn, obj.GetName()) {
			c.enqueue(o)
		}
	}
}
