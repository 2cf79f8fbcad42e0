package e2e

import (
	"strings"
	"testing"
)

// TestJourneyKubectlFlags: the commands take kubectl's connection
// flags: --as impersonates (the API server's refusal names the user),
// --server overrides the kubeconfig's address (a dead one is the one
// line and exit 1 of an unreachable API server), and --request-timeout
// is parsed as kubectl parses it.
func TestJourneyKubectlFlags(t *testing.T) {
	w := newWorkspace(t)
	r := w.must(1, "get", "apps", "-n", "default", "--as", "system:serviceaccount:default:nobody")
	if want := `User "system:serviceaccount:default:nobody" cannot list resource "apps" in API group "syncd.dev"`; !strings.Contains(r.stderr, want) {
		t.Errorf("--as: stderr lacks %q:\n%s", want, r)
	}
	r = w.must(1, "tree", "app", "x", "-n", "default", "--server", "https://127.0.0.1:1", "--request-timeout", "2s")
	if lines := strings.Split(strings.TrimSpace(r.stderr), "\n"); len(lines) > 2 || !strings.Contains(r.stderr, "127.0.0.1:1") {
		t.Errorf("--server at a dead address: want one error naming it:\n%s", r)
	}
	r = w.must(1, "get", "apps", "--request-timeout", "soon")
	if !strings.Contains(r.stderr, "soon") {
		t.Errorf("a bad --request-timeout is not named:\n%s", r)
	}
}
