// Package e2e checks the planner's offline split against a real
// kube-apiserver: applying every manager's slice with Server-Side Apply
// must leave exactly the ownership the planner promised in Slice.Fields,
// and the merged live object must contain the rendered one.
//
// It holds only tests; they need the control plane built by
// hack/controlplane.sh (see internal/testenv). It does not check
// CustomResourceDefinition objects' own field sets: offline, the planner
// types CRDs with a deduced schema, which is documented as approximate.
package e2e
