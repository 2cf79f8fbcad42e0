package main

import (
	"errors"
	"os"
	"strings"

	"syncd.dev/syncd/internal/inventory"
)

// serviceAccountNamespaceFile holds the namespace of a pod's service
// account: syncd's own namespace when it runs in the cluster (a variable
// for tests).
var serviceAccountNamespaceFile = "/var/run/secrets/kubernetes.io/serviceaccount/namespace"

// defaultNamespace is the namespace manifests/ installs syncd in.
const defaultNamespace = "syncd-system"

// syncdNamespace returns syncd's own namespace: $POD_NAMESPACE (set by
// manifests/deployment.yaml), else the in-cluster service account's
// namespace, else syncd-system. Run from a workstation or CI it is
// syncd-system unless $POD_NAMESPACE says otherwise.
func syncdNamespace() string {
	if ns := os.Getenv("POD_NAMESPACE"); ns != "" {
		return ns
	}
	if b, err := os.ReadFile(serviceAccountNamespaceFile); err == nil {
		if ns := strings.TrimSpace(string(b)); ns != "" {
			return ns
		}
	}
	return defaultNamespace
}

// reservedFor returns syncd's own objects for a command: those of syncd's
// namespace, of the inventory namespace and of each extra namespace (the
// Lease's, when --leader-elect-namespace moves it).
func reservedFor(inventoryNS string, extra ...string) inventory.Reserved {
	r := inventory.Reserved{Namespaces: []string{syncdNamespace()}, InventoryNamespace: inventoryNS}
	for _, ns := range extra {
		if ns != "" && ns != r.Namespaces[0] {
			r.Namespaces = append(r.Namespaces, ns)
		}
	}
	return r
}

// refusedExit gives a render refused for declaring syncd's own objects
// exit code 3 (blocked by a guard, as conflicts are); other errors are
// returned as they are.
func refusedExit(err error) error {
	var refused inventory.ReservedErrors
	if errors.As(err, &refused) {
		return withCode(exitConflict, err)
	}
	return err
}
