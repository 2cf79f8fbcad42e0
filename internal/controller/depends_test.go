package controller

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

// TestFindCycle checks the path findCycle reports through the start App.
func TestFindCycle(t *testing.T) {
	tests := map[string]struct {
		graph map[string][]string // dependsOn of each App; "a" is the start
		want  []string
	}{
		"none":                 {graph: map[string][]string{"a": {"b"}, "b": {"c"}}},
		"two":                  {graph: map[string][]string{"a": {"b"}, "b": {"a"}}, want: []string{"a", "b", "a"}},
		"three":                {graph: map[string][]string{"a": {"x", "b"}, "b": {"c"}, "c": {"a"}}, want: []string{"a", "b", "c", "a"}},
		"diamond, no cycle":    {graph: map[string][]string{"a": {"b", "c"}, "b": {"d"}, "c": {"d"}}},
		"cycle not through a":  {graph: map[string][]string{"a": {"b"}, "b": {"c"}, "c": {"b"}}},
		"missing dependencies": {graph: map[string][]string{"a": {"gone"}}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := findCycle("a", tc.graph["a"], func(n string) []string { return tc.graph[n] })
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("findCycle (-want +got):\n%s", diff)
			}
		})
	}
}
