// Package planner turns an app's manifests into a Plan: the objects to
// apply, in apply order, each cut into one apply configuration ("slice")
// per field manager.
//
// Render reads an app's directory (a Tree: the directory and the
// repository root it is in): a kustomization, built with kustomize's
// krusty through a read-only file system confined to the repository root
// (os.Root), so overlays may use ../../base but nothing outside the
// repository, with plugins, Helm and all network access off, one build at
// a time with kyaml's OpenAPI schema reset after any that set it, a panic
// recovered into the render's error and a KustomizeTimeout; or a plain
// tree of YAML/JSON files, read from the directory alone. egress.Forbid is
// the process-wide guard (called by syncd's main) that keeps a build from
// fetching what the checks miss. See docs/kustomize.md.
//
// With Options.Substitution, Planner.Plan first replaces ${NAME} and
// ${NAME:=default} in each rendered object (Flux's postBuild expressions,
// with github.com/fluxcd/pkg/envsubst): in each string of the decoded
// object (values and keys), never in its YAML text, so a value lands byte
// for byte whatever YAML would make of it ("#", "!", "a: b", a newline);
// a string made only of variables that spells a JSON number or
// true/false becomes one (Flux's ${quote} variables keep it a string); a
// key that becomes another key of its map is refused; $${NAME} is a
// literal; objects annotated or labelled syncd.dev/substitute or
// kustomize.toolkit.fluxcd.io/substitute: disabled are left alone; an
// unset variable without a default is refused (UnsetRefused, the default)
// naming the field. A sensitive variable (from a Secret) may land only in
// fields the app's redaction rules hide, never in an object's identity or
// a map key: every string that used one (its value or text derived from
// it) is recorded. Not guaranteed: an associative-list key field holding
// one (a container's name) is only as hidden as the rules make it, and it
// appears in the field paths reports print.
//
// Planner.Plan then validates every object, defaults namespaces, orders
// the objects by stage (CRDs, Namespaces, other cluster-scoped objects,
// namespaced objects; sorted by group, kind,
// namespace and name within a stage) and splits each object between the
// app's default manager and the managers of its split rules. The split
// works on structured-merge-diff typed values: the object's field set is
// partitioned by the rules' paths and each manager's part is extracted with
// the keys of associative-list items kept, so the slices merge on the
// server into the rendered object.
//
// What is refused (nothing is planned): invalid YAML, a document without
// apiVersion, kind or metadata.name, metadata.managedFields,
// metadata.resourceVersion and metadata.uid, duplicate objects, namespaced
// objects without a namespace when the app sets none, cluster-scoped
// objects with a namespace, objects that do not match their schema, split
// paths that reach inside an atomic list or map, and (Render) files over
// MaxFileSize, symlinks leaving a plain directory, and in kustomizations
// remote references in any field, absolute paths, paths leaving the
// repository root (".." or symlinks), missing targets, cycles, plugins,
// KRM functions and Helm charts, each named by kustomization file and
// field.
//
// What is stripped with a warning: status (for kinds whose status is a
// subresource), and server-set metadata (creationTimestamp, generation,
// selfLink, deletionTimestamp, deletionGracePeriodSeconds); a null
// creationTimestamp is stripped silently.
//
// Schemas: with Options.Converter from NewClusterConverter (the cluster's
// OpenAPI v3), every slice's Fields equals what the API server records
// (checked against a real kube-apiserver in the e2e package). Offline, the
// same holds for built-in kinds (client-go's schema) and for custom
// resources whose CRD is in the render (its openAPIV3Schema, list types
// included).
//
// Custom kinds whose CRD is not in the render are typed with the cluster's
// OpenAPI v3 document of their group-version when Options.Schemas is set
// (ClusterSchemas: fetched only for such kinds, cached by content hash).
//
// Not guaranteed: without Options.Schemas (or when the cluster cannot
// tell), custom kinds whose CRD is not in the render, and
// CustomResourceDefinition objects themselves, are typed with a deduced
// schema: they cannot be split and their Fields are approximate. A CRD's
// custom resources get a reduced ObjectMeta schema offline (names, labels,
// annotations, finalizers, ownerReferences). Status is stripped only for
// kinds known to serve it as a subresource: built-in kinds, CRDs in the
// render with subresources.status, and, with Options.Schemas, kinds whose
// group-version's OpenAPI document in the cluster has a status subresource
// path. Offline (no Options.Schemas, or the cluster cannot tell) status of
// other kinds is left in the apply configuration. The planner's only I/O
// against the cluster goes through Options (Mapper, Converter, Schemas). Slices are
// computed from Git alone; whether an apply of them conflicts with other
// managers is the applier's business.
package planner
