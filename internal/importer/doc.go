// Package importer translates the objects of Flux (Kustomization,
// GitRepository, HelmRepository, OCIRepository, HelmRelease) and of
// Argo CD (Application) into syncd's objects (GitSource, HelmSource,
// OCISource, App) or the sources and apps of a syncd.yaml: syncd import
// flux and syncd import argocd.
//
// Each kind has one mapping function (gitRepository, kustomization,
// application, ...). A mapping reads the object as unstructured data, so
// no Flux or Argo CD Go module is needed, and it accounts for every
// field of the object's spec: a field is either mapped onto a syncd
// field or named in a Warning (file, object, field, what to do), never
// dropped without a word. Fields the importer does not know (a newer
// Flux or Argo CD) are warned about too. An object with a field of
// another type than the tool's API gives it, or a key given twice, is
// not imported at all (the tool would not admit it either), with a
// Warning per problem that names the field or the key, never the value.
//
// It never reads a Secret: credentials, decryption keys and kubeconfigs
// stay in the Secrets the imported objects name, and the syncd objects
// name the same Secrets (secretRef). Where syncd expects another key in
// such a Secret than Flux or Argo CD do, a warning says which.
//
// Not guaranteed: the importer reads the objects as written. It does not
// build kustomizations, so a Flux object patched by an overlay is
// imported unpatched (import the cluster's objects with --from-cluster,
// or pipe kustomize build into syncd import, to get what Flux sees). It
// does not check that the result is admitted by a cluster or that the
// repositories hold what the objects point at.
package importer
