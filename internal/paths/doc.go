// Package paths parses field-path patterns written in the API server's
// field-path notation and matches them against structured-merge-diff paths.
//
// The notation is the one kube-apiserver prints in field-conflict messages
// and fieldpath.Path.String() produces:
//
//	.spec.replicas
//	.spec.template.spec.containers[name="app"].image
//	.metadata.finalizers[="example.com/guard"]
//	.spec.ports[containerPort=80,protocol="TCP"]
//	.spec.args[0]
//
// Two wildcards are added: "*" as a field name matches any map key or
// struct field, and "[*]" matches any list item (keyed, set or indexed).
// A field name that holds ".", "[", "]", "\"" or "*" (annotation keys such
// as app.kubernetes.io/name) is written as a JSON string after the dot:
// .metadata.labels."app.kubernetes.io/name".
//
// A Pattern matches a path and everything below it: ".spec" matches
// ".spec.replicas".
//
// Not guaranteed: patterns are matched syntactically. The package does not
// know any schema, so it cannot tell whether a pattern can ever match an
// object of a given kind; callers that need that check it against the field
// sets they hold.
package paths
