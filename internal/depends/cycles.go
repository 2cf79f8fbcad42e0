package depends

import "slices"

// Cycle is one dependency cycle: the dependsOn entry that closes it (entry
// Entry of node Node) and the names on it, the first repeated at the end
// ("a", "b", "a"; "a", "a" for a node that depends on itself).
type Cycle struct {
	Node, Entry int
	Names       []string
}

// SelfLoop reports whether the cycle is a node that depends on itself.
func (c Cycle) SelfLoop() bool { return len(c.Names) == 2 }

// Cycles returns every cycle of the graph once, in the order a
// depth-first search in the graph's order meets them.
func (g *Graph) Cycles() []Cycle {
	f := g.newCycleFinder()
	for i := range g.nodes {
		f.visit(i)
	}
	return f.cycles
}

// CycleThrough returns the names of a cycle from name back to name ("a",
// "b", "a"), or nil when no cycle passes through name. A cycle among
// other nodes that name only leads to is not one: those nodes report it
// themselves.
func (g *Graph) CycleThrough(name string) []string {
	start, ok := g.Index(name)
	if !ok {
		return nil
	}
	f := g.newCycleFinder()
	f.visit(start)
	// start stays on the search path while the search runs, so every
	// entry that leads back to it closes a cycle that starts at it.
	for _, c := range f.cycles {
		if c.Names[0] == name {
			return c.Names
		}
	}
	return nil
}

// visitState is where a depth-first search stands with one node.
type visitState int

const (
	unvisited visitState = iota
	onPath
	finished
)

// cycleFinder finds dependency cycles by depth-first search: an entry
// pointing back at a node still on the search path closes a cycle.
type cycleFinder struct {
	g      *Graph
	state  []visitState
	path   []int
	cycles []Cycle
}

func (g *Graph) newCycleFinder() *cycleFinder {
	return &cycleFinder{g: g, state: make([]visitState, len(g.nodes))}
}

func (f *cycleFinder) visit(i int) {
	if f.state[i] != unvisited {
		return
	}
	f.state[i] = onPath
	f.path = append(f.path, i)
	for j := range f.g.nodes[i].DependsOn {
		k, ok := f.g.edge(i, j)
		if !ok {
			continue
		}
		switch f.state[k] {
		case unvisited:
			f.visit(k)
		case onPath:
			f.record(i, j, k)
		}
	}
	f.path = f.path[:len(f.path)-1]
	f.state[i] = finished
}

// record notes the cycle closed by entry j of node i, which points back at
// node k on the search path.
func (f *cycleFinder) record(i, j, k int) {
	from := slices.Index(f.path, k)
	names := make([]string, 0, len(f.path)-from+1)
	for _, n := range f.path[from:] {
		names = append(names, f.g.nodes[n].Name)
	}
	names = append(names, f.g.nodes[k].Name)
	f.cycles = append(f.cycles, Cycle{Node: i, Entry: j, Names: names})
}
