package controller

import (
	"fmt"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/depends"
)

// dependencyRetry is how soon an App that waits for its dependencies
// looks again at the latest; a dependency's status change queues it at
// once (readinessChanged).
const dependencyRetry = 30 * time.Second

// dependencyWait returns why the App must wait before it is applied, or
// nil when every App of its spec.dependsOn is ready. The error names
// each App waited for and why.
func (c *Controller) dependencyWait(app *v1alpha1.App) error {
	waits := depends.Waits(app.Spec.DependsOn, func(name string) (string, bool) {
		why := c.dependencyProblem(app.Namespace, name)
		return "App " + name + " " + why, why != ""
	})
	if len(waits) == 0 {
		return nil
	}
	return fmt.Errorf("App %s/%s: spec.dependsOn: not applied yet, waiting for %s", app.Namespace, app.Name, strings.Join(waits, "; "))
}

// dependencyCycle returns an error naming the cycle when the App's
// spec.dependsOn leads back to it through other Apps of its namespace
// (A → B → A): none of them could ever be applied, so waiting would not
// end. Nil without a cycle through the App.
func (c *Controller) dependencyCycle(app *v1alpha1.App) error {
	cycle := c.dependencyGraph(app).CycleThrough(app.Name)
	if cycle == nil {
		return nil
	}
	return fmt.Errorf("App %s/%s: spec.dependsOn: dependency cycle %s: none of these Apps can be applied first; remove one of them from another's dependsOn", app.Namespace, app.Name, strings.Join(cycle, " → "))
}

// dependencyGraph returns the dependsOn graph of app (its spec as given)
// and of the Apps of its namespace that its dependsOn leads to, as the
// informer last saw them; a missing App has no dependencies.
func (c *Controller) dependencyGraph(app *v1alpha1.App) *depends.Graph {
	nodes := []depends.Node{{Name: app.Name, DependsOn: app.Spec.DependsOn}}
	seen := map[string]bool{app.Name: true}
	for i := 0; i < len(nodes); i++ {
		for _, name := range nodes[i].DependsOn {
			if seen[name] {
				continue
			}
			seen[name] = true
			nodes = append(nodes, depends.Node{Name: name, DependsOn: c.dependsOnOf(app.Namespace, name)})
		}
	}
	return depends.New(nodes)
}

// dependsOnOf returns the spec.dependsOn of App namespace/name, as the
// informer last saw it (none for an App that is missing).
func (c *Controller) dependsOnOf(namespace, name string) []string {
	obj, err := c.apps.ByNamespace(namespace).Get(name)
	if err != nil {
		return nil
	}
	dep, err := appFrom(obj)
	if err != nil {
		return nil
	}
	return dep.Spec.DependsOn
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
// last attempt applied (lastAppliedRevision = lastAttemptedRevision), or
// when only its source fails after that (inForceWhileSourceFails).
func notReadyReason(dep *v1alpha1.App) string {
	r := meta.FindStatusCondition(dep.Status.Conditions, string(v1alpha1.ConditionReady))
	switch {
	case r == nil:
		return "has not been reconciled yet"
	case dep.Status.ObservedGeneration != dep.Generation || r.ObservedGeneration != dep.Generation:
		return fmt.Sprintf("has not reconciled generation %d yet", dep.Generation)
	case inForceWhileSourceFails(dep, r):
		return ""
	case r.Status != "True":
		return "is not Ready (" + r.Reason + ")"
	case dep.Status.LastAppliedRevision != dep.Status.LastAttemptedRevision:
		return "has not applied revision " + shortRevision(dep.Status.LastAttemptedRevision) + " yet"
	}
	return ""
}

// inForceWhileSourceFails reports whether dep is Ready=False only because
// its source fails (reason SourceFailed) while the revision it last
// attempted was applied and stays in force: what it applied stands, so
// its dependents need not wait for its source to answer (as a Flux
// Kustomization stays Ready on its last artifact while its GitRepository
// fails to fetch).
func inForceWhileSourceFails(dep *v1alpha1.App, ready *metav1.Condition) bool {
	return ready.Status != metav1.ConditionTrue && ready.Reason == string(v1alpha1.ReasonSourceFailed) &&
		dep.Status.LastAppliedRevision != "" && dep.Status.LastAppliedRevision == dep.Status.LastAttemptedRevision
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
// names it (depends.Graph.Dependents).
func (c *Controller) enqueueDependents(obj *unstructured.Unstructured) {
	objs, err := c.apps.ByNamespace(obj.GetNamespace()).List(everything)
	if err != nil {
		return
	}
	var nodes []depends.Node
	byName := map[string]any{}
	for _, o := range objs {
		if app, err := appFrom(o); err == nil {
			nodes = append(nodes, depends.Node{Name: app.Name, DependsOn: app.Spec.DependsOn})
			byName[app.Name] = o
		}
	}
	for _, name := range depends.New(nodes).Dependents(obj.GetName()) {
		c.enqueue(byName[name])
	}
}
