package depends

import "slices"

// Node is one app of a Graph: its name and the names it depends on.
type Node struct {
	Name      string
	DependsOn []string
}

// Graph is the dependsOn graph of a list of nodes. Use New.
type Graph struct {
	nodes []Node
	// byName is the index of the first node of each name ("" excluded).
	byName map[string]int
}

// New returns the graph of nodes, kept in their order.
func New(nodes []Node) *Graph {
	g := &Graph{nodes: nodes, byName: make(map[string]int, len(nodes))}
	for i, n := range nodes {
		if _, dup := g.byName[n.Name]; !dup && n.Name != "" {
			g.byName[n.Name] = i
		}
	}
	return g
}

// Index returns the index of the node of name (the first of that name);
// ok is false when there is none.
func (g *Graph) Index(name string) (i int, ok bool) {
	i, ok = g.byName[name]
	return i, ok
}

// edge returns the node entry j of node i points at; ok is false when it
// names no node.
func (g *Graph) edge(i, j int) (k int, ok bool) {
	return g.Index(g.nodes[i].DependsOn[j])
}

// Dependents returns the names of the nodes whose dependsOn names name,
// in the graph's order, each once.
func (g *Graph) Dependents(name string) []string {
	var out []string
	for _, n := range g.nodes {
		if slices.Contains(n.DependsOn, name) && !slices.Contains(out, n.Name) {
			out = append(out, n.Name)
		}
	}
	return out
}

// Order returns the indices of the nodes so that every node comes after
// the nodes it depends on; otherwise they keep their order, so nodes
// without dependsOn stay as written. Of the nodes whose dependencies are
// all placed, the first in the list goes next. Entries naming no node,
// or the node itself, are ignored, and the nodes on a cycle come last in
// list order.
func (g *Graph) Order() []int {
	placed := make([]bool, len(g.nodes))
	out := make([]int, 0, len(g.nodes))
	for next := g.firstReady(placed); next >= 0; next = g.firstReady(placed) {
		placed[next] = true
		out = append(out, next)
	}
	for i := range g.nodes {
		if !placed[i] {
			out = append(out, i)
		}
	}
	return out
}

// firstReady returns the first node not yet placed whose dependencies are
// all placed, or -1.
func (g *Graph) firstReady(placed []bool) int {
	for i := range g.nodes {
		if !placed[i] && g.dependenciesPlaced(i, placed) {
			return i
		}
	}
	return -1
}

// dependenciesPlaced reports whether every node that node i depends on,
// but itself, is placed.
func (g *Graph) dependenciesPlaced(i int, placed []bool) bool {
	for j := range g.nodes[i].DependsOn {
		if k, ok := g.edge(i, j); ok && k != i && !placed[k] {
			return false
		}
	}
	return true
}
