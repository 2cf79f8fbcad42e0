package preview

import (
	"encoding/base64"
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// TestDiffLeavesObjectsAlone: Diff shares the objects' values instead of
// copying them, so it must not change them, Secrets' redaction included.
func TestDiffLeavesObjectsAlone(t *testing.T) {
	tests := map[string]struct {
		live, after *unstructured.Unstructured
	}{
		"secret changed": {
			live:  secret(map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("hunter2"))}),
			after: secret(map[string]any{"password": base64.StdEncoding.EncodeToString([]byte("correct-horse")), "token": "dG9r"}),
		},
		"secret created": {
			after: secret(map[string]any{"password": "cGFzcw=="}),
		},
		"config map with server fields": {
			live:  configMap(map[string]any{"a": "1"}, owns("m", "a")),
			after: withStatus(configMap(map[string]any{"a": "2"}, owns("m", "a"), owns("other", "a"))),
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var live *unstructured.Unstructured
			if tc.live != nil {
				live = tc.live.DeepCopy()
			}
			after := tc.after.DeepCopy()
			got, err := Diff(tc.live, tc.after)
			if err != nil {
				t.Fatal(err)
			}
			if got == "" {
				t.Fatal("empty diff of objects that differ")
			}
			if tc.live != nil {
				if diff := cmp.Diff(live.Object, tc.live.Object); diff != "" {
					t.Errorf("Diff changed live (-before +after):\n%s", diff)
				}
			}
			if diff := cmp.Diff(after.Object, tc.after.Object); diff != "" {
				t.Errorf("Diff changed after (-before +after):\n%s", diff)
			}
		})
	}
}

func withStatus(u *unstructured.Unstructured) *unstructured.Unstructured {
	u.SetResourceVersion("8")
	u.SetGeneration(3)
	u.Object["status"] = map[string]any{"x": "y"}
	return u
}
