package main

import (
	"os"
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/inventory"
)

// TestReservedFor: syncd's namespace comes from $POD_NAMESPACE (else
// syncd-system off-cluster), the Lease's namespace joins it, and the
// inventory namespace is kept apart.
func TestReservedFor(t *testing.T) {
	tests := map[string]struct {
		podNamespace string
		saNamespace  string // the in-cluster namespace file; "" for none
		inventory    string
		extra        []string
		want         inventory.Reserved
	}{
		"defaults": {
			inventory: "syncd-system",
			want:      inventory.Reserved{Namespaces: []string{"syncd-system"}, InventoryNamespace: "syncd-system"},
		},
		"in the cluster without POD_NAMESPACE": {
			saNamespace: "gitops\n",
			inventory:   "gitops",
			want:        inventory.Reserved{Namespaces: []string{"gitops"}, InventoryNamespace: "gitops"},
		},
		"POD_NAMESPACE over the in-cluster namespace": {
			saNamespace:  "elsewhere",
			podNamespace: "gitops",
			inventory:    "gitops-inventory",
			want:         inventory.Reserved{Namespaces: []string{"gitops"}, InventoryNamespace: "gitops-inventory"},
		},
		"the Lease elsewhere": {
			podNamespace: "gitops",
			inventory:    "gitops",
			extra:        []string{"", "gitops", "leases"},
			want:         inventory.Reserved{Namespaces: []string{"gitops", "leases"}, InventoryNamespace: "gitops"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			t.Setenv("POD_NAMESPACE", tc.podNamespace)
			file := filepath.Join(t.TempDir(), "namespace")
			if tc.saNamespace != "" {
				if err := os.WriteFile(file, []byte(tc.saNamespace), 0o600); err != nil {
					t.Fatal(err)
				}
			}
			defer func(prev string) { serviceAccountNamespaceFile = prev }(serviceAccountNamespaceFile)
			serviceAccountNamespaceFile = file
			if diff := cmp.Diff(tc.want, reservedFor(tc.inventory, tc.extra...)); diff != "" {
				t.Errorf("reservedFor (-want +got):\n%s", diff)
			}
		})
	}
}
