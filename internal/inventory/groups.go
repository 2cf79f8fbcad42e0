package inventory

import "k8s.io/client-go/metadata"

// resourceGroup is the items of one resource and namespace, read
// together (one paginated LIST when they are many).
type resourceGroup[T any] struct {
	key   watchKey
	ri    metadata.ResourceInterface
	items []T
}

// byResource groups items by resource and namespace, keeping the groups
// in the order they were first seen so that reads fan out in a
// deterministic order.
type byResource[T any] struct {
	index  map[watchKey]*resourceGroup[T]
	groups []*resourceGroup[T]
}

// add puts item into the group of wk, starting it with ri when it is new.
func (b *byResource[T]) add(wk watchKey, ri metadata.ResourceInterface, item T) {
	if b.index == nil {
		b.index = map[watchKey]*resourceGroup[T]{}
	}
	g := b.index[wk]
	if g == nil {
		g = &resourceGroup[T]{key: wk, ri: ri}
		b.index[wk] = g
		b.groups = append(b.groups, g)
	}
	g.items = append(g.items, item)
}
