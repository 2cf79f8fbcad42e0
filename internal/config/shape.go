package config

import (
	"fmt"
	"maps"
	"reflect"
	"sort"
	"strconv"
	"strings"
	"time"

	yaml "go.yaml.in/yaml/v3"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

var (
	configType   = reflect.TypeFor[Config]()
	durationType = reflect.TypeFor[metav1.Duration]()
)

// walker checks the YAML node tree against the shape of Config before it
// is decoded, so that every unknown field, repeated field and value of the
// wrong type is reported with its line, not only the first one the JSON
// decoder trips over. It removes what it reports from the tree, so the
// rest can still be decoded and validated.
type walker struct {
	file   string
	errs   Errors
	budget int
	// rejected holds the fields whose values were removed for having the
	// wrong type; validation problems at or under them only repeat the
	// news and are dropped.
	rejected []string
	// active holds the mappings and lists being walked, to catch aliases
	// that point back into themselves.
	active map[*yaml.Node]bool
}

// spend counts one node against the budget and reports false, recording
// the problem once, when the budget is used up.
func (w *walker) spend(n *yaml.Node) bool {
	w.budget--
	if w.budget == -1 {
		w.errorf(n.Line, "", "the document expands to more than %d YAML nodes (too many aliases?); write the config out plainly", maxNodes)
	}
	return w.budget >= 0
}

// enter marks n as being walked; it reports false, recording the problem,
// when n is already being walked (an alias cycle).
func (w *walker) enter(n *yaml.Node, field string) bool {
	if w.active == nil {
		w.active = map[*yaml.Node]bool{}
	}
	if w.active[n] {
		w.errorf(n.Line, field, "this node contains an alias to itself (a YAML cycle); cycles are not allowed, write the value out")
		return false
	}
	w.active[n] = true
	return true
}

func (w *walker) leave(n *yaml.Node) { delete(w.active, n) }

func (w *walker) errorf(line int, field, format string, args ...any) {
	w.errs = append(w.errs, FieldError{File: w.file, Line: line, Field: field, Message: fmt.Sprintf(format, args...)})
}

// resolve follows aliases to the node they name.
func resolve(n *yaml.Node) *yaml.Node {
	for i := 0; n != nil && n.Kind == yaml.AliasNode && i < 100; i++ {
		n = n.Alias
	}
	return n
}

func isNull(n *yaml.Node) bool {
	return n == nil || (n.Kind == yaml.ScalarNode && n.ShortTag() == "!!null")
}

// reject records that the value of field was removed and replaces it so
// the decoder skips it.
func (w *walker) reject(n *yaml.Node, field string) {
	w.rejected = append(w.rejected, field)
	setNull(n)
}

// setNull replaces a value with null.
func setNull(n *yaml.Node) {
	*n = yaml.Node{Kind: yaml.ScalarNode, Tag: "!!null", Value: "null", Line: n.Line, Column: n.Column}
}

// describe names what a node holds, for "expected X, got Y" messages.
func describe(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		v := n.Value
		if len(v) > 40 {
			v = v[:40] + "..."
		}
		switch n.ShortTag() {
		case "!!int", "!!float":
			return "the number " + v
		case "!!bool":
			return "the boolean " + v
		case "!!null":
			return "nothing"
		case "!!str":
			return strconv.Quote(v)
		default:
			return fmt.Sprintf("a value tagged %s", n.ShortTag())
		}
	}
	return "an unsupported YAML node"
}

func join(parent, key string) string {
	if parent == "" {
		return key
	}
	return parent + "." + key
}

func index(parent string, i int) string {
	return parent + "[" + strconv.Itoa(i) + "]"
}

func (w *walker) walk(n *yaml.Node, t reflect.Type, field string) {
	n = resolve(n)
	if n == nil {
		return
	}
	if !w.spend(n) || isNull(n) {
		return
	}
	for t.Kind() == reflect.Pointer {
		t = t.Elem()
	}

	switch {
	case t == durationType:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!str" {
			w.errorf(n.Line, field, "expected a duration such as 30s, 5m or 1h30m, got %s", describe(n))
			w.reject(n, field)
			return
		}
		if _, err := time.ParseDuration(n.Value); err != nil {
			w.errorf(n.Line, field, "%q is not a duration; use a Go duration such as 30s, 5m or 1h30m (units ns, us, ms, s, m, h)", n.Value)
			w.reject(n, field)
		}
	case t.Kind() == reflect.Struct:
		if n.Kind != yaml.MappingNode {
			w.errorf(n.Line, field, "expected a mapping of fields (%s), got %s", strings.Join(jsonNames(t), ", "), describe(n))
			w.reject(n, field)
			return
		}
		if !w.enter(n, field) {
			return
		}
		w.mapping(n, t, field, nil)
		w.leave(n)
	case t.Kind() == reflect.Slice:
		if n.Kind != yaml.SequenceNode {
			hint := ""
			if n.Kind == yaml.ScalarNode {
				hint = fmt.Sprintf("; write [%s] or put each item on its own line starting with \"- \"", n.Value)
			}
			w.errorf(n.Line, field, "expected a list, got %s%s", describe(n), hint)
			w.reject(n, field)
			return
		}
		if !w.enter(n, field) {
			return
		}
		for i, item := range n.Content {
			w.walk(item, t.Elem(), index(field, i))
		}
		w.leave(n)
	case t.Kind() == reflect.Map:
		w.namedValues(n, t, field)
	case t.Kind() == reflect.String:
		if n.Kind != yaml.ScalarNode {
			w.errorf(n.Line, field, "expected a string, got %s", describe(n))
			w.reject(n, field)
			return
		}
		switch n.ShortTag() {
		case "!!str":
		case "!!timestamp":
			// A date-like plain scalar; keep its text rather than let it
			// become a time value.
			n.Tag = "!!str"
		case "!!int", "!!float", "!!bool":
			w.errorf(n.Line, field, "expected a string, got %s; put it in quotes: %q", describe(n), n.Value)
			w.reject(n, field)
		default:
			w.errorf(n.Line, field, "expected a string, got %s; remove the tag", describe(n))
			w.reject(n, field)
		}
	case t.Kind() == reflect.Int:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!int" {
			w.errorf(n.Line, field, "expected a whole number, got %s", describe(n))
			w.reject(n, field)
		}
	case t.Kind() == reflect.Bool:
		if n.Kind != yaml.ScalarNode || n.ShortTag() != "!!bool" {
			w.errorf(n.Line, field, "expected true or false, got %s", describe(n))
			w.reject(n, field)
		}
	}
}

// namedValues checks a mapping decoded into map type t (names to
// values, as apps[].substitute): each value has t's element type.
func (w *walker) namedValues(n *yaml.Node, t reflect.Type, field string) {
	if n.Kind != yaml.MappingNode {
		w.errorf(n.Line, field, "expected a mapping of names to values, got %s", describe(n))
		w.reject(n, field)
		return
	}
	if !w.enter(n, field) {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		if k := resolve(n.Content[i]); k != nil {
			w.walk(n.Content[i+1], t.Elem(), field+"."+k.Value)
		}
	}
	w.leave(n)
}

// mapping checks the fields of a mapping decoded into struct type t,
// dropping unknown and repeated ones, then the mappings it merges with
// "<<". override holds the fields set by the mappings merging this one
// (they win over this mapping's values, which are then not checked); it is
// nil for a mapping that is not merged into another.
func (w *walker) mapping(n *yaml.Node, t reflect.Type, field string, override map[string]bool) {
	fields := jsonFields(t)
	own := map[string]int{}
	content := n.Content
	kept := make([]*yaml.Node, 0, len(content))
	var merges []*yaml.Node
	for i := 0; i+1 < len(content); i += 2 {
		k, v := resolve(content[i]), content[i+1]
		if k == nil {
			continue
		}
		if k.Kind == yaml.ScalarNode && k.ShortTag() == "!!merge" {
			kept = append(kept, content[i], v)
			merges = append(merges, v)
			continue
		}
		if k.Kind != yaml.ScalarNode || k.ShortTag() != "!!str" {
			w.errorf(k.Line, field, "field names must be strings, got %s", describe(k))
			continue
		}
		ft, ok := fields[k.Value]
		if !ok {
			w.errorf(k.Line, join(field, k.Value), "unknown field %q%s", k.Value, suggest(k.Value, jsonNames(t)))
			continue
		}
		if first, dup := own[k.Value]; dup {
			w.errorf(k.Line, join(field, k.Value), "set twice (first at line %d); keep one", first)
			continue
		}
		own[k.Value] = k.Line
		if !override[k.Value] {
			w.walk(v, ft, join(field, k.Value))
		}
		kept = append(kept, content[i], v)
	}
	n.Content = kept
	if len(merges) == 0 {
		return
	}

	// Fields set here win over the merged mappings' values.
	next := make(map[string]bool, len(override)+len(own))
	for k := range override {
		next[k] = true
	}
	for k := range own {
		next[k] = true
	}
	for _, m := range merges {
		m = resolve(m)
		if m == nil {
			continue
		}
		var sources []*yaml.Node
		switch m.Kind {
		case yaml.MappingNode:
			sources = []*yaml.Node{m}
		case yaml.SequenceNode:
			for _, s := range m.Content {
				sources = append(sources, resolve(s))
			}
		}
		if len(sources) == 0 {
			w.errorf(m.Line, field, "a merge key (<<) must name a mapping or a list of mappings")
		}
		for _, src := range sources {
			if !w.spend(m) {
				return
			}
			if src == nil || src.Kind != yaml.MappingNode {
				w.errorf(m.Line, field, "a merge key (<<) must name a mapping or a list of mappings")
				continue
			}
			if !w.enter(src, field) {
				continue
			}
			w.mapping(src, t, field, next)
			w.leave(src)
		}
	}
}

// jsonFields maps the JSON names of t's fields to their types.
func jsonFields(t reflect.Type) map[string]reflect.Type {
	fields := make(map[string]reflect.Type, t.NumField())
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("json"), ",")
		if name == "-" || !f.IsExported() {
			continue
		}
		if name == "" && f.Anonymous && f.Type.Kind() == reflect.Struct {
			// An embedded struct's fields are the outer one's, as
			// encoding/json decodes them (GitRef in GitSource).
			maps.Copy(fields, jsonFields(f.Type))
			continue
		}
		if name == "" {
			name = f.Name
		}
		fields[name] = f.Type
	}
	return fields
}

func jsonNames(t reflect.Type) []string {
	fields := jsonFields(t)
	names := make([]string, 0, len(fields))
	for name := range fields {
		names = append(names, name)
	}
	sort.Strings(names)
	return names
}

// suggest returns "; did you mean X?" for the known name closest to name,
// or the list of known names when none is close.
func suggest(name string, known []string) string {
	best, bestDist := "", 3
	for _, k := range known {
		if strings.EqualFold(k, name) {
			return fmt.Sprintf("; did you mean %q? (field names are case-sensitive)", k)
		}
		if d := editDistance(strings.ToLower(name), strings.ToLower(k)); d < bestDist {
			best, bestDist = k, d
		}
	}
	if best != "" {
		return fmt.Sprintf("; did you mean %q?", best)
	}
	return "; known fields here: " + strings.Join(known, ", ")
}

// editDistance is the Levenshtein distance between a and b, counted in
// bytes (field names are ASCII).
func editDistance(a, b string) int {
	if len(a) > 64 || len(b) > 64 {
		return 64
	}
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
