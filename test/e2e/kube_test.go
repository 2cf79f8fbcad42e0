package e2e

import (
	"slices"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
)

// mustKubectl runs kubectl as a user does and fails the test when it
// fails; it returns what kubectl printed.
func mustKubectl(t *testing.T, args ...string) string {
	t.Helper()
	out, err := kubectl(args...)
	if err != nil {
		t.Fatalf("kubectl %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	return string(out)
}

// fieldOwners are the managers whose managedFields entry holds path
// (the API server's notation: .spec.replicas), in managedFields order.
func fieldOwners(obj *unstructured.Unstructured, path string) []string {
	var owners []string
	for _, e := range ownership.DecodeEntries(obj.GetManagedFields()).Entries {
		found := false
		e.Set.Leaves().Iterate(func(p fieldpath.Path) { found = found || p.String() == path })
		if found {
			owners = append(owners, e.Manager)
		}
	}
	return owners
}

// managers are the field managers of obj's managedFields entries.
func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, mf := range obj.GetManagedFields() {
		if !slices.Contains(out, mf.Manager) {
			out = append(out, mf.Manager)
		}
	}
	return out
}
