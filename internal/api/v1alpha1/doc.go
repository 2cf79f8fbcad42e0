// Package v1alpha1 holds the Go types of syncd's custom resources in API
// group syncd.dev, version v1alpha1: GitSource (a Git repository syncd
// polls) and App (a directory of it applied to the cluster). Both are
// namespaced.
//
// The CRDs shipped in manifests/crds/ are written by hand (controller-gen
// is not a dependency of this module); schema_test.go checks that every
// field of these types is in the schema with the same type, and the other
// way round, and that every schema property has a description.
//
// The nested policy types (split, conflicts, migrate, drift, sensitive)
// are those of package config, so an App and an apps[] entry of
// syncd.yaml cannot drift apart; translate.go in package controller turns
// a GitSource and an App into one config.Source and config.App.
//
// The package has no deepcopy functions: the controller reads the objects
// as unstructured and converts them (runtime.DefaultUnstructuredConverter).
// It does not validate; the CRD's CEL rules check what can be checked at
// admission, and the controller runs the file config's validation on the
// translated app for the rest.
package v1alpha1
