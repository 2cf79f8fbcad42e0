// Package planner turns an app's manifests into a Plan: the objects to
// apply, in apply order, each cut into one apply configuration ("slice")
// per field manager.
//
// Render reads a directory: a kustomization (built with kustomize's krusty,
// restricted to the directory, with plugins, Helm and remote bases off) or
// a plain tree of YAML/JSON files. Planner.Plan then validates every object,
// defaults namespaces, orders the objects by stage (CRDs, Namespaces, other
// cluster-scoped objects, namespaced objects; sorted by group, kind,
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
// MaxFileSize, symlinks leaving the directory, remote kustomize bases,
// kustomize plugins and Helm charts.
//
// What is stripped with a warning: status (for kinds whose status is a
// subresource), and server-set metadata (creationTimestamp, generation,
// selfLink, deletionTimestamp, deletionGracePeriodSeconds); a null
// creationTimestamp is stripped silently.
//
// Not guaranteed: offline (no Options.Converter), custom kinds whose CRD is
// not in the render are typed with a deduced schema in which every list is
// atomic, and a CRD's metadata is typed with a reduced ObjectMeta schema;
// the field sets then may differ from the server's. The planner does no I/O
// against the cluster: scope and schema come from Options. Slices are
// computed from Git alone; whether an apply of them conflicts with other
// managers is the applier's business.
package planner
