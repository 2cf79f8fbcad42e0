// Package testenv starts a real Kubernetes control plane on loopback for
// syncd's tests, benchmarks and demo: etcd, kube-apiserver with RBAC and
// service-account tokens, and (on request) kube-controller-manager for
// garbage collection, namespace deletion and the workload controllers.
//
// The binaries are built from the project's tool modules by
// hack/controlplane.sh and found in SYNCD_CONTROLPLANE_DIR or the
// version-keyed user cache directory; nothing is downloaded at test time.
//
// It does not run a scheduler or kubelet: Pods never start, so tests that
// need workload readiness write status themselves. It gives no isolation
// between tests beyond namespaces: tests that share an Env must not touch
// cluster-scoped objects another test uses.
package testenv
