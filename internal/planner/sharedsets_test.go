package planner

import (
	"fmt"
	"runtime"
	"strings"
	"testing"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
)

// TestSlicesShareEqualFieldSets: in a plan, slices whose managers own the
// same fields (objects of one shape, other values) hold one field set,
// made on one CPU or on several (splitBuiltinsAhead); a slice that owns
// other fields holds its own; and every shared set is the set the slice's
// apply configuration owns.
func TestSlicesShareEqualFieldSets(t *testing.T) {
	app := config.App{Name: "web"}
	var docs []string
	for i := range 200 {
		docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: c-%03d, namespace: ns}\ndata: {k: v%d, payload: p%d}\n", i, i, i))
	}
	docs = append(docs, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: other, namespace: ns}\ndata: {k: v, extra: x}\n")
	for _, cpus := range []int{1, 4} {
		prev := runtime.GOMAXPROCS(cpus)
		plan := mustPlan(t, app, Options{}, strings.Join(docs, "---\n"))
		runtime.GOMAXPROCS(prev)
		distinct := map[*fieldpath.Set]bool{}
		for i := range plan.Objects {
			o := &plan.Objects[i]
			if len(o.Slices) != 1 {
				t.Fatalf("%s: %d slices, want 1", o.Ref, len(o.Slices))
			}
			s := o.Slices[0]
			distinct[s.Fields] = true
			own, err := o.Typed().ToFieldSet()
			if err != nil {
				t.Fatal(err)
			}
			if want := own.Difference(identity); !s.Fields.Equals(want) {
				t.Errorf("%d CPUs: %s owns %s, its slice records %s", cpus, o.Ref, want, s.Fields)
			}
		}
		if len(distinct) != 2 {
			t.Errorf("%d CPUs: 201 ConfigMaps of two shapes hold %d field sets, want 2", cpus, len(distinct))
		}
	}
}
