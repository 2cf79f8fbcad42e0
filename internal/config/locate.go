package config

import (
	"strconv"
	"strings"

	yaml "go.yaml.in/yaml/v3"
)

// locator maps a field path such as "apps[1].split[0].manager" to the line
// it is written on.
type locator struct {
	root *yaml.Node
}

// line returns the line of the field at path: the line of its key for a
// mapping field, of the item for a list item. When the field is not
// written (a required field is missing), it returns the line of the
// deepest enclosing field that is.
func (l *locator) line(path string) int {
	if l == nil || l.root == nil {
		return 0
	}
	n := resolve(l.root)
	line := n.Line
	for _, seg := range splitPath(path) {
		var next, at *yaml.Node
		if seg.key != "" {
			budget := 1000
			at, next = lookup(n, seg.key, &budget)
		} else if n.Kind == yaml.SequenceNode && seg.index < len(n.Content) {
			// The item's own line, which for an alias is where it is used,
			// not where its anchor is.
			at = n.Content[seg.index]
			next = resolve(at)
		}
		if next == nil {
			return line
		}
		line = at.Line
		n = next
	}
	return line
}

// lookup finds key in mapping n, following merge keys, and returns the key
// node and the value node. budget bounds the mappings visited, so nested
// merges of merges cannot make it exponential.
func lookup(n *yaml.Node, key string, budget *int) (*yaml.Node, *yaml.Node) {
	*budget--
	if n == nil || n.Kind != yaml.MappingNode || *budget < 0 {
		return nil, nil
	}
	var merges []*yaml.Node
	for i := 0; i+1 < len(n.Content); i += 2 {
		k := resolve(n.Content[i])
		if k == nil || k.Kind != yaml.ScalarNode {
			continue
		}
		if k.ShortTag() == "!!merge" {
			merges = append(merges, resolve(n.Content[i+1]))
			continue
		}
		if k.Value == key {
			return k, resolve(n.Content[i+1])
		}
	}
	for _, m := range merges {
		if m == nil {
			continue
		}
		candidates := []*yaml.Node{m}
		if m.Kind == yaml.SequenceNode {
			candidates = m.Content
		}
		for _, c := range candidates {
			if k, v := lookup(resolve(c), key, budget); k != nil {
				return k, v
			}
		}
	}
	return nil, nil
}

type segment struct {
	key   string
	index int
}

// splitPath splits "apps[1].split[0].manager" into its keys and indexes.
func splitPath(path string) []segment {
	var segs []segment
	for part := range strings.SplitSeq(path, ".") {
		key, rest, _ := strings.Cut(part, "[")
		if key != "" {
			segs = append(segs, segment{key: key})
		}
		for rest != "" {
			num, after, _ := strings.Cut(rest, "]")
			i, err := strconv.Atoi(num)
			if err != nil {
				return segs
			}
			segs = append(segs, segment{index: i})
			rest = strings.TrimPrefix(after, "[")
		}
	}
	return segs
}
