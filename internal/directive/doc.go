// Package directive reads the per-object directives a repository puts on
// its objects: syncd's own annotations and their Flux kustomize-controller
// equivalents, so that a Flux repository keeps meaning what it meant.
//
//	syncd.dev/prune: disabled       kustomize.toolkit.fluxcd.io/prune: disabled
//	syncd.dev/reconcile: disabled   kustomize.toolkit.fluxcd.io/reconcile: disabled
//	syncd.dev/ssa: IfNotPresent     kustomize.toolkit.fluxcd.io/ssa: IfNotPresent
//	syncd.dev/ssa: Ignore           kustomize.toolkit.fluxcd.io/ssa: Ignore
//
// and Helm's helm.sh/resource-policy: keep, read as prune: disabled (a
// chart's objects carry it so that nothing deletes them).
//
// As Flux does, a directive is found in the annotations or the labels of
// an object, and values are compared without regard to case ("ignore",
// "ifnotpresent" work). The applier, the inventory's prune, the drift
// detector and the plan all read them here, so the rule is written once.
//
// Not guaranteed: the package only reads; which copy of an object to read
// (as Git declares it, or as it is live) is the caller's decision, and
// docs/migrating-from-flux.md says which one each stage reads.
package directive
