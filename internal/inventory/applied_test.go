package inventory

import (
	"fmt"
	"testing"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// TestAppliedAllocations: the member set Finish builds from the apply
// allocates per object its member, its slice hashes and its apply result,
// and one small slice more when the apply reported a fingerprint: no map
// per object (a no-op of 10,000 objects is where `syncd apply` peaks).
func TestAppliedAllocations(t *testing.T) {
	const n = 1000
	tests := map[string]struct {
		change applier.Change
		max    float64
	}{
		"no-op answered without reads":  {change: applier.Change{Action: applier.Unchanged}, max: 3},
		"written, fingerprint reported": {change: applier.Change{Action: applier.Configured, Owned: "fingerprint"}, max: 4},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, cs := appliedRun(n, tc.change)
			var out []*Member
			allocs := testing.AllocsPerRun(3, func() { out = r.applied(cs) })
			for _, mem := range out {
				if len(mem.Slices) != 1 || mem.ResourceVersion == "" {
					t.Fatalf("member %s/%s: %+v, want applied with one slice", mem.Namespace, mem.Name, mem)
				}
			}
			// The index of the results by object, as it grows, adds
			// some 0.02 an object.
			if perObject := allocs / n; perObject > tc.max+0.05 {
				t.Errorf("applied allocated %.2f times an object, want at most %.0f (and the index's few)", perObject, tc.max)
			}
		})
	}
}

// appliedRun returns a run over a plan of n ConfigMaps of one slice each,
// all members of the stored inventory, and a ChangeSet giving each object
// change (its Object, Manager and ResourceVersion set).
func appliedRun(n int, change applier.Change) (*Run, *applier.ChangeSet) {
	plan := &planner.Plan{}
	prev := &Inventory{}
	cs := &applier.ChangeSet{}
	for i := range n {
		ref := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: fmt.Sprintf("cm-%04d", i)}
		hash := fmt.Sprintf("%064x", i)
		plan.Objects = append(plan.Objects, planner.Object{Ref: ref, Slices: []planner.Slice{{Manager: "syncd", Hash: hash}}})
		prev.Members = append(prev.Members, &Member{Version: ref.Version, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name,
			Slices: []SliceHash{{Manager: "syncd", Hash: hash, Owned: "recorded"}}, ResourceVersion: "1"})
		c := change
		c.Object, c.Manager, c.ResourceVersion = ref, "syncd", "2"
		cs.Changes = append(cs.Changes, c)
	}
	return &Run{app: App{Name: "a"}, plan: plan, prevIdx: prev.Index(), adopted: map[Key]bool{}}, cs
}
