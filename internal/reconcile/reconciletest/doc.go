// Package reconciletest holds the fixtures that the tests of the per-app
// reconcile (package reconcile) and of its file driver (package daemon)
// share: a Git repository on disk driven with the git CLI, ConfigMap
// manifests, a reconcile.Cluster for a rest.Config, a tenant (a service
// account with its own namespace and rules) and a wait for a condition.
//
// It is for tests only. Each fixture fails the test it is given on an
// error and removes what it made when the test ends; none of them
// isolates tests beyond the namespaces the test control plane
// (package testenv) hands out.
package reconciletest
