package depends

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// graphOf builds a graph from "name dep dep" lists, in order.
func graphOf(specs ...[]string) *Graph {
	nodes := make([]Node, len(specs))
	for i, s := range specs {
		nodes[i] = Node{Name: s[0], DependsOn: s[1:]}
	}
	return New(nodes)
}

// TestCycleThrough checks the path CycleThrough reports through the start
// node (the App controller's check of one App).
func TestCycleThrough(t *testing.T) {
	tests := map[string]struct {
		graph map[string][]string // dependsOn of each node; "a" is the start
		want  []string
	}{
		"none":                 {graph: map[string][]string{"a": {"b"}, "b": {"c"}}},
		"two":                  {graph: map[string][]string{"a": {"b"}, "b": {"a"}}, want: []string{"a", "b", "a"}},
		"three":                {graph: map[string][]string{"a": {"x", "b"}, "b": {"c"}, "c": {"a"}}, want: []string{"a", "b", "c", "a"}},
		"diamond, no cycle":    {graph: map[string][]string{"a": {"b", "c"}, "b": {"d"}, "c": {"d"}}},
		"cycle not through a":  {graph: map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"b"}}},
		"missing dependencies": {graph: map[string][]string{"a": {"gone"}}},
		"a depends on itself":  {graph: map[string][]string{"a": {"b", "a"}}, want: []string{"a", "a"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			nodes := []Node{{Name: "a", DependsOn: tc.graph["a"]}}
			for n, deps := range tc.graph {
				if n != "a" {
					nodes = append(nodes, Node{Name: n, DependsOn: deps})
				}
			}
			got := New(nodes).CycleThrough("a")
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("CycleThrough(a) (-want +got):\n%s", diff)
			}
		})
	}
}

// TestCycles checks that every cycle is found once, at the entry that
// closes it, in the order a search in the graph's order meets them.
func TestCycles(t *testing.T) {
	tests := map[string]struct {
		g    *Graph
		want []Cycle
	}{
		"none": {g: graphOf([]string{"a", "b"}, []string{"b"})},
		"two cycles": {
			g:    graphOf([]string{"a", "b"}, []string{"b", "c"}, []string{"c", "a"}, []string{"x", "y"}, []string{"y", "x"}),
			want: []Cycle{{Node: 2, Entry: 0, Names: []string{"a", "b", "c", "a"}}, {Node: 4, Entry: 0, Names: []string{"x", "y", "x"}}},
		},
		"a self-loop": {
			g:    graphOf([]string{"a", "nowhere", "a"}),
			want: []Cycle{{Node: 0, Entry: 1, Names: []string{"a", "a"}}},
		},
		"a duplicate name stands for its first node": {
			g:    graphOf([]string{"a", "b"}, []string{"b", "a"}, []string{"a"}),
			want: []Cycle{{Node: 1, Entry: 0, Names: []string{"a", "b", "a"}}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, tc.g.Cycles()); diff != "" {
				t.Errorf("Cycles (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDependents checks the reverse edges: the nodes naming one, in the
// graph's order.
func TestDependents(t *testing.T) {
	g := graphOf([]string{"a", "c"}, []string{"b", "a"}, []string{"c"}, []string{"d", "c", "c"})
	for name, want := range map[string][]string{"c": {"a", "d"}, "a": {"b"}, "b": nil, "gone": nil} {
		if diff := cmp.Diff(want, g.Dependents(name)); diff != "" {
			t.Errorf("Dependents(%s) (-want +got):\n%s", name, diff)
		}
	}
}

// TestWaits checks that an app waits for its dependencies that are not
// ready, in dependsOn order.
func TestWaits(t *testing.T) {
	notReady := map[string]string{"db": "failed", "queue": "not applied"}
	got := Waits([]string{"queue", "cache", "db"}, func(dep string) (string, bool) {
		why, ok := notReady[dep]
		return dep + ": " + why, ok
	})
	if diff := cmp.Diff([]string{"queue: not applied", "db: failed"}, got); diff != "" {
		t.Errorf("Waits (-want +got):\n%s", diff)
	}
	if got := Waits([]string{"cache"}, func(string) (string, bool) { return "", false }); got != nil {
		t.Errorf("Waits with every dependency ready = %q, want none", got)
	}
}
