package planner

import (
	"fmt"
	"strconv"

	"github.com/fluxcd/pkg/envsubst"
	yaml "go.yaml.in/yaml/v3"
	sigsyaml "sigs.k8s.io/yaml"
)

// objectYAML returns the YAML substitution works on: the object
// marshalled anew from its JSON, as Flux does (kustomize's AsYAML). The
// quoting of the source is not kept: a "${REPLICAS}" written in quotes
// becomes a number like an unquoted one, and comments are gone.
func objectYAML(m Manifest) (string, error) {
	out, err := sigsyaml.Marshal(m.Object.Object)
	if err != nil {
		return "", fmt.Errorf("variable substitution: %w", err)
	}
	return string(out), nil
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
