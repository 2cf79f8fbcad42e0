package drift

import "strings"

// Redacted replaces the Desired and Live values of fields that may hold
// secret data.
const Redacted = "<redacted>"

// lastApplied is the annotation client-side kubectl apply writes; on a
// Secret it holds the whole Secret, data included.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// secretPath reports whether path, in a Secret, may hold secret data:
// anything under .data or .stringData, and the last-applied-configuration
// annotation.
func secretPath(path string) bool {
	for _, top := range []string{".data", ".stringData"} {
		if path == top || strings.HasPrefix(path, top+".") || strings.HasPrefix(path, top+"[") {
			return true
		}
	}
	return strings.HasPrefix(path, ".metadata.annotations."+lastApplied)
}
