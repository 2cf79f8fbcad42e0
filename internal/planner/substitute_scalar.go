package planner

import (
	"fmt"
	"slices"
	"strconv"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"github.com/fluxcd/pkg/envsubst/parse"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// walker substitutes the strings of one decoded object and records the
// fields that sensitive variables reach.
type walker struct {
	s *Substitution
	// sensitive are the fields a sensitive variable reached, each with
	// the variables of its string.
	sensitive []reach
}

// value returns v, at path p, with its strings and keys substituted. Maps
// and lists are new; other values are v's own.
func (w *walker) value(v any, p fieldpath.Path) (any, error) {
	switch t := v.(type) {
	case map[string]any:
		return w.mapping(t, p)
	case []any:
		out := make([]any, len(t))
		for i, c := range t {
			var err error
			if out[i], err = w.value(c, append(p, fieldpath.PathElement{Index: &i})); err != nil {
				return nil, err
			}
		}
		return out, nil
	case string:
		return w.scalar(t, p)
	}
	return v, nil
}

// mapping substitutes a map's keys and values, keys in sorted order (the
// order errors are found in). A key that becomes another key of the map
// changes the object's structure and is refused.
func (w *walker) mapping(m map[string]any, p fieldpath.Path) (map[string]any, error) {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	out := make(map[string]any, len(m))
	for _, k := range keys {
		key, err := w.key(k, p, func(key string) bool { _, taken := out[key]; return taken || slices.Contains(keys, key) })
		if err != nil {
			return nil, err
		}
		if out[key], err = w.value(m[k], append(p, fieldpath.PathElement{FieldName: &key})); err != nil {
			return nil, err
		}
	}
	return out, nil
}

// key substitutes the key k of the map at p; has reports whether the map
// already has a key.
func (w *walker) key(k string, p fieldpath.Path, has func(string) bool) (string, error) {
	if !hasExpression(k) {
		return k, nil
	}
	where := pathString(p) + " (a key)"
	lk := &lookup{s: w.s}
	out, err := envsubst.Eval(k, lk.value)
	if err != nil {
		return "", evalError(where, lk, err)
	}
	if lk.sensitive() {
		w.sensitive = append(w.sensitive, reach{path: p.Copy(), keys: true, names: lk.sensitiveNames()})
	}
	if out != k && has(out) {
		becomes := out
		if lk.sensitive() {
			becomes = "a key"
		}
		return "", fmt.Errorf("the variable %s changes the object's structure: the key %s of %s becomes %s, which %s already has; use another key or another value", lk.names(), k, pathString(p), becomes, pathString(p))
	}
	return out, nil
}

// scalar substitutes the string text at p. The result is text with each
// expression replaced by its value, byte for byte, except when text is
// made only of expressions (scalarValue).
func (w *walker) scalar(text string, p fieldpath.Path) (any, error) {
	if !hasExpression(text) {
		return text, nil
	}
	tree, err := parse.Parse(text)
	if err != nil {
		return nil, fmt.Errorf("variable substitution at %s: %w", pathString(p), err)
	}
	lk := &lookup{s: w.s}
	out, err := envsubst.Eval(text, lk.value)
	if err != nil {
		return nil, evalError(pathString(p), lk, err)
	}
	if lk.sensitive() {
		w.sensitive = append(w.sensitive, reach{path: p.Copy(), names: lk.sensitiveNames()})
	}
	return w.s.scalarValue(tree, out), nil
}

// scalarValue is what a string made only of expressions (tree) that
// substitutes to out stands for, as in Flux, where the substituted YAML
// is read again: the number or boolean out spells when it spells one
// exactly as JSON writes it ("3", "-1.5", "true"; not "0123", "1.10",
// "yes" or "null", which stay text), and the text between the quotes of
// Flux's quote variables (${QUOTE}${PORT}${QUOTE} with QUOTE a " or a ').
// Any other string, and every string with text of its own around its
// expressions, is out.
func (s *Substitution) scalarValue(tree *parse.Tree, out string) any {
	nodes := topNodes(tree.Root)
	for _, n := range nodes {
		if _, ok := n.(*parse.FuncNode); !ok {
			return out
		}
	}
	if q := s.quoteOf(nodes[0]); len(nodes) >= 2 && q != "" && q == s.quoteOf(nodes[len(nodes)-1]) && len(out) >= 2*len(q) {
		return out[len(q) : len(out)-len(q)]
	}
	return typedScalar(out)
}

// typedScalar is out as a JSON number or boolean when it spells one
// exactly as JSON writes it, else out.
func typedScalar(out string) any {
	switch out {
	case "true":
		return true
	case "false":
		return false
	}
	if i, err := strconv.ParseInt(out, 10, 64); err == nil && strconv.FormatInt(i, 10) == out {
		return i
	}
	if f, err := strconv.ParseFloat(out, 64); err == nil && strconv.FormatFloat(f, 'f', -1, 64) == out {
		return f
	}
	return out
}

// quoteOf is the value of n when n is a plain ${NAME} whose value is a
// quote (" or '), else "".
func (s *Substitution) quoteOf(n parse.Node) string {
	f, ok := n.(*parse.FuncNode)
	if !ok || f.Name != "" || len(f.Args) > 0 {
		return ""
	}
	v, ok := s.Variables[f.Param]
	if !ok || (v.Value != `"` && v.Value != "'") {
		return ""
	}
	return v.Value
}

// topNodes are the nodes a template is a sequence of, empty text left
// out.
func topNodes(n parse.Node) []parse.Node {
	switch t := n.(type) {
	case *parse.ListNode:
		var out []parse.Node
		for _, c := range t.Nodes {
			out = append(out, topNodes(c)...)
		}
		return out
	case *parse.TextNode:
		if t.Value == "" {
			return nil
		}
	}
	return []parse.Node{n}
}

// hasExpression reports whether s may hold an expression or an escape:
// a "$".
func hasExpression(s string) bool {
	return strings.Contains(s, "$")
}

// pathString prints p as errors name fields: ".data.b", "." for the
// object itself.
func pathString(p fieldpath.Path) string {
	if len(p) == 0 {
		return "."
	}
	return p.String()
}
