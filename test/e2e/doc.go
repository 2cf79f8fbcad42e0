// Package e2e is syncd's acceptance suite: it proves the product, the
// binary users run, rather than the libraries behind it.
//
// TestMain builds syncd once with the release build line
// (hack/build.sh, the line the Dockerfile runs: CGO_ENABLED=0, -trimpath,
// version stamped), starts the real control plane from internal/testenv
// (etcd, kube-apiserver, kube-controller-manager) and installs syncd's
// CRDs with kubectl, as a user does. Every test then drives that binary
// as a subprocess, with the process-wide settings its main() makes (the
// network block above all), against servers on loopback: Git over HTTP,
// a Helm chart repository, an OCI registry, alert receivers, a second
// control plane.
//
// Each journey is one way into syncd and goes through the same steps
// (journey.run): render, apply, a second apply that writes no object,
// plan exit 0, a change in the source, plan exit 2, the change applied
// (by apply or by the daemon), and no secret value in anything the binary
// printed.
//
// What it does NOT establish: that pods start (the control plane has no
// scheduler or kubelet), that the container image runs, or behaviour on
// a real cloud cluster; the in-package tests cover each stage's edge
// cases, this suite covers the journeys through the whole binary.
package e2e
