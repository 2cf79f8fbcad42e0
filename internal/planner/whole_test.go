package planner

import (
	"path/filepath"
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestWholeSliceMatchesExtraction: an object one manager applies whole
// shares Desired instead of being extracted from its typed value. The
// shortcut must give exactly what the extraction gives (content, field
// set, hash).
func TestWholeSliceMatchesExtraction(t *testing.T) {
	shared := 0
	for _, name := range []string{"plain", "kustomize", "crds", "split"} {
		plan, err := planDir(t, filepath.Join("testdata", "plan", name), Options{})
		if err != nil {
			t.Fatal(err)
		}
		for _, o := range plan.Objects {
			if len(o.Slices) != 1 || o.Slices[0].Object != o.Desired || o.deduced {
				continue
			}
			shared++
			s := o.Slices[0]
			want, err := makeSlice(o.Desired, o.Typed, s.Manager, s.Fields)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(want.Object.Object, s.Object.Object); diff != "" {
				t.Errorf("%s %s: shared object differs from the extracted slice (-extracted +shared):\n%s", name, o.Ref, diff)
			}
			if !want.Fields.Equals(s.Fields) {
				t.Errorf("%s %s: fields %s, extraction gives %s", name, o.Ref, s.Fields, want.Fields)
			}
			if want.Hash != s.Hash {
				t.Errorf("%s %s: hash %s, extraction gives %s", name, o.Ref, s.Hash, want.Hash)
			}
		}
	}
	if shared < 5 {
		t.Fatalf("only %d objects took the shared path: the test checks nothing", shared)
	}

}
