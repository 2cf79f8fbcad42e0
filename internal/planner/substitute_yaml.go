package planner

import (
	"bytes"
	"fmt"
	"strconv"

	"github.com/fluxcd/pkg/envsubst"
	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// objectYAML returns the YAML substitution works on: the object as the
// render wrote it, scalar styles kept (a quoted "${PORT}" stays a string,
// an unquoted ${REPLICAS} may become a number) and comments dropped. A
// manifest without its document (built in memory), or whose document uses
// anchors, is the object marshalled anew.
func objectYAML(m Manifest) (string, error) {
	if n := styledNode(m); n != nil {
		var b bytes.Buffer
		enc := yaml.NewEncoder(&b)
		enc.SetIndent(2)
		if enc.Encode(n) == nil && enc.Close() == nil {
			return b.String(), nil
		}
	}
	out, err := sigsyaml.Marshal(m.Object.Object)
	if err != nil {
		return "", fmt.Errorf("variable substitution: %w", err)
	}
	return string(out), nil
}

// styledNode returns the YAML node of m's object from its document, nil
// when there is none to use.
func styledNode(m Manifest) *yaml.Node {
	if m.doc == nil {
		return nil
	}
	var doc yaml.Node
	if yaml.Unmarshal(m.doc, &doc) != nil || len(doc.Content) != 1 || usesAnchors(&doc) {
		return nil
	}
	n := doc.Content[0]
	if m.Item > 0 {
		if n = listItem(n, m.Item); n == nil {
			return nil
		}
	}
	dropComments(n)
	return n
}

// listItem returns the 1-based item of a List document's items.
func listItem(list *yaml.Node, item int) *yaml.Node {
	if list.Kind != yaml.MappingNode {
		return nil
	}
	for i := 0; i+1 < len(list.Content); i += 2 {
		if list.Content[i].Value == "items" {
			items := list.Content[i+1]
			if items.Kind != yaml.SequenceNode || item > len(items.Content) {
				return nil
			}
			return items.Content[item-1]
		}
	}
	return nil
}

// usesAnchors reports whether n or a node below it is an anchor, an alias
// or a merge key: an item cut out of its document may lose what it refers
// to.
func usesAnchors(n *yaml.Node) bool {
	if n.Anchor != "" || n.Kind == yaml.AliasNode || n.ShortTag() == "!!merge" {
		return true
	}
	for _, c := range n.Content {
		if usesAnchors(c) {
			return true
		}
	}
	return false
}

// dropComments removes every comment at and below n: a ${NAME} in a
// comment is not substituted (and not refused in strict mode).
func dropComments(n *yaml.Node) {
	n.HeadComment, n.LineComment, n.FootComment = "", "", ""
	for _, c := range n.Content {
		dropComments(c)
	}
}

// locateFailure finds the first field of text whose substitution fails, and
// the unset variable it uses (empty when it fails otherwise). It is only
// called after a failure, to name the field.
func locateFailure(text string, s *Substitution) (field, variable string) {
	var doc yaml.Node
	if yaml.Unmarshal([]byte(text), &doc) != nil || len(doc.Content) != 1 {
		return "", ""
	}
	return firstFailure(doc.Content[0], "", s)
}

// firstFailure walks n (at path p) in document order.
func firstFailure(n *yaml.Node, p string, s *Substitution) (field, variable string) {
	switch n.Kind {
	case yaml.ScalarNode:
		return scalarFailure(n.Value, p, s)
	case yaml.MappingNode:
		for i := 0; i+1 < len(n.Content); i += 2 {
			k := n.Content[i]
			if f, v := scalarFailure(k.Value, p+" (a key)", s); f != "" {
				return f, v
			}
			if f, v := firstFailure(n.Content[i+1], p+"."+k.Value, s); f != "" {
				return f, v
			}
		}
	case yaml.SequenceNode:
		for i, c := range n.Content {
			if f, v := firstFailure(c, p+"["+strconv.Itoa(i)+"]", s); f != "" {
				return f, v
			}
		}
	}
	return "", ""
}

// scalarFailure substitutes one scalar; on failure it returns p (or "." for
// the top) and the unset variable, if that is the cause.
func scalarFailure(text, p string, s *Substitution) (field, variable string) {
	unset := ""
	lk := &lookup{s: s}
	_, err := envsubst.Eval(text, func(name string) (string, bool) {
		v, ok := lk.value(name)
		if !ok && unset == "" {
			unset = name
		}
		return v, ok
	})
	if err == nil {
		return "", ""
	}
	if p == "" {
		p = "."
	}
	return p, unset
}
