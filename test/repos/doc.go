// Package repos tests syncd end to end on repositories shaped like the ones
// people already have: List documents, kustomize overlays and components
// that reach across the repository (../../base), a CRD and its custom
// resources in one app, several apps in one repository, Deployments written
// out in full with zero values and other units than the server prints, an
// HPA that owns replicas, a webhook configuration the server defaults.
//
// The fixtures under testdata/repo are our own, written in the shapes
// public manifest sets have (monitoring stacks, CD tools' installs, demo
// apps with overlays); no third-party file is copied.
//
// The tests run the real syncd binary against a real kube-apiserver with
// kube-controller-manager (Deployments get ReplicaSets and status, the HPA
// controller scales through /scale), with the repository served by a real
// Git server on loopback.
package repos
