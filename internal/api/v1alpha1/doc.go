// Package v1alpha1 holds the Go types of syncd's custom resources in API
// group syncd.dev, version v1alpha1: GitSource (a Git repository syncd
// polls) and App (a directory of it applied to the cluster). Both are
// namespaced.
//
// The CRDs in manifests/crds/ and zz_generated.deepcopy.go are generated
// from these types by controller-gen (hack/generate.sh; the test command
// fails when they are stale): schemas from the Go types, descriptions
// from their doc comments, and the CEL rules, bounds, defaults and
// printer columns from their +kubebuilder markers. schema_test.go also
// checks that every schema property has a description.
//
// The fields an App shares with an apps[] entry of syncd.yaml are one
// type, config.AppSpec, embedded in AppSpec, and a GitSource's revision
// fields are config.GitRef: a field added there is in the file config,
// the CRD, the controller's translation (translate.go in package
// controller) and syncd convert at once.
//
// The controller reads the objects as unstructured and converts them
// (runtime.DefaultUnstructuredConverter). The package does not validate;
// the CRD's CEL rules check what can be checked at admission, and the
// controller runs the file config's validation on the translated app for
// the rest.
//
// +kubebuilder:object:generate=true
// +groupName=syncd.dev
package v1alpha1
