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

// dependencyCycle returns an error naming the cycle when the App's
// spec.dependsOn leads back to it through other Apps of its namespace
// (A → B → A): none of them could ever be applied, so waiting would not
// end. Nil without a cycle through the App.
func (c *Controller) dependencyCycle(app *v1alpha1.App) error {
	cycle := findCycle(app.Name, app.Spec.DependsOn, c.dependsOnOf(app.Namespace))
	if cycle == nil {
		return nil
	}
	return fmt.Errorf("App %s/%s: spec.dependsOn: dependency cycle %s: none of these Apps can be applied first; remove one of them from another's dependsOn", app.Namespace, app.Name, strings.Join(cycle, " → "))
}

// dependsOnOf returns the spec.dependsOn of the Apps of namespace, as
// the informer last saw them (none for an App that is missing).
func (c *Controller) dependsOnOf(namespace string) func(name string) []string {
	return func(name string) []string {
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
}

// findCycle returns a path of App names from start back to start
// ([a b a]) following deps (start's dependsOn) and depsOf (the others'),
// or nil when there is none. Each App is visited once, so a cycle among
// other Apps that does not pass through start is not reported (those
// Apps report it themselves).
func findCycle(start string, deps []string, depsOf func(string) []string) []string {
	s := cycleSearch{start: start, depsOf: depsOf, visited: map[string]bool{start: true}}
	if s.visit(deps) {
		return append([]string{start}, s.path...)
	}
	return nil
}

// cycleSearch is a depth-first search for a path back to start.
type cycleSearch struct {
	start   string
	depsOf  func(string) []string
	visited map[string]bool
	path    []string
}

// visit reports whether one of names leads back to start; path is then
// the way from there to start.
func (s *cycleSearch) visit(names []string) bool {
	for _, name := range names {
		if name == s.start {
			s.path = append(s.path, name)
			return true
		}
		if s.visited[name] {
			continue
		}
		s.visited[name] = true
		s.path = append(s.path, name)
		if s.visit(s.depsOf(name)) {
			return true
		}
		s.path = s.path[:len(s.path)-1]
	}
	return false
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
