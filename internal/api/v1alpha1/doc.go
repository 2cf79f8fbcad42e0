// Package v1alpha1 holds the Go types of syncd's custom resources in API
// group syncd.dev, version v1alpha1: the sources GitSource (a Git
// repository syncd polls), HelmSource (a Helm chart repository) and
// OCISource (an OCI artifact), and App (a directory of a GitSource or
// an OCISource, or a chart of a HelmSource, applied to the cluster).
// All are namespaced.
//
// The CRDs in manifests/crds/ and zz_generated.deepcopy.go are generated
// from these types by controller-gen (hack/generate.sh; the test command
// fails when they are stale): schemas from the Go types, descriptions
// from their doc comments, and the CEL rules, bounds, defaults and
// printer columns from their +kubebuilder markers. schema_test.go also
// checks that every schema property has a description.
//
// The fields an App shares with an apps[] entry of syncd.yaml are one
// type, config.AppSpec, embedded in AppSpec; a GitSource's revision
// fields are config.GitRef and an OCISource's config.OCIRef (the rest of
// a HelmSource's and an OCISource's fields are held to the file's by
// TestSpecFieldsMatchConfig): a field added there is in the file config,
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
