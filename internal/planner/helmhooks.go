package planner

import (
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Hook is where a chart's hook object is applied. Hooks are ordinary
// objects to syncd: applied with server-side apply in their stage, kept
// in the inventory and pruned like the chart's other objects, so an
// unchanged hook costs nothing on a no-op reconcile and never runs again
// (a Job hook runs once, when it is created or re-created). See
// docs/helm.md.
type Hook int

// Hooks.
const (
	// HookNone is an object that is not a hook: applied in its stage.
	HookNone Hook = iota
	// HookBefore is a pre-install or pre-upgrade hook: applied in
	// StageHooksBefore, before every other object of the app.
	HookBefore
	// HookAfter is a post-install or post-upgrade hook: applied in
	// StageHooksAfter, after every other object of the app.
	HookAfter
)

// Apply stages of a chart's hooks. Their numbers lie outside the other
// stages' (which inventories record), before and after them.
const (
	// StageHooksBefore holds a chart's pre-install and pre-upgrade hooks.
	StageHooksBefore Stage = -1
	// StageHooksAfter holds a chart's post-install and post-upgrade hooks.
	StageHooksAfter Stage = StageNamespaced + 1
)

// hookAnnotation names a chart's hook object's events.
const hookAnnotation = "helm.sh/hook"

// Hook events, as charts write them in hookAnnotation.
const (
	hookPreInstall   = "pre-install"
	hookPreUpgrade   = "pre-upgrade"
	hookPostInstall  = "post-install"
	hookPostUpgrade  = "post-upgrade"
	hookCRDInstall   = "crd-install" // Helm 2's, still found in charts
	hookTest         = "test"
	hookTestSuccess  = "test-success"
	hookPreDelete    = "pre-delete"
	hookPostDelete   = "post-delete"
	hookPreRollback  = "pre-rollback"
	hookPostRollback = "post-rollback"
)

// hookOf says where an object of a chart goes: not a hook (HookNone), a
// hook of an apply (HookBefore, HookAfter; an object naming both kinds of
// event goes before), or left out (keep false): test hooks, and hooks of
// deletes and rollbacks only, which syncd never performs (Argo CD skips
// and maps hooks the same way). Unknown events are left to the API
// server: the object is applied in its own stage.
func hookOf(obj *unstructured.Unstructured) (hook Hook, keep bool) {
	value, ok := obj.GetAnnotations()[hookAnnotation]
	if !ok {
		return HookNone, true
	}
	events := map[string]bool{}
	for _, e := range strings.Split(value, ",") {
		events[strings.TrimSpace(e)] = true
	}
	switch {
	case events[hookPreInstall] || events[hookPreUpgrade] || events[hookCRDInstall]:
		return HookBefore, true
	case events[hookPostInstall] || events[hookPostUpgrade]:
		return HookAfter, true
	case onlySkipped(events):
		return HookNone, false
	}
	return HookNone, true
}

// skippedEvents are the hook events syncd never runs.
var skippedEvents = map[string]bool{
	hookTest: true, hookTestSuccess: true, "test-failure": true,
	hookPreDelete: true, hookPostDelete: true, hookPreRollback: true, hookPostRollback: true,
}

// onlySkipped reports whether every event is one syncd never runs.
func onlySkipped(events map[string]bool) bool {
	for e := range events {
		if e != "" && !skippedEvents[e] {
			return false
		}
	}
	return true
}

// stage returns the stage of an object of this hook kind whose stage as
// an ordinary object would be s.
func (h Hook) stage(s Stage) Stage {
	switch h {
	case HookBefore:
		return StageHooksBefore
	case HookAfter:
		return StageHooksAfter
	}
	return s
}
