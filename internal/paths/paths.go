package paths

import (
	"encoding/json"
	"fmt"
	"sort"
	"strconv"
	"strings"
	"unicode/utf8"

	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
	"sigs.k8s.io/structured-merge-diff/v6/value"
)

// Pattern is a parsed field-path pattern. The zero Pattern has no elements
// and matches every path.
type Pattern struct {
	elems []element
	src   string
}

type elemKind int

const (
	kindField elemKind = iota
	kindAnyField
	kindKey
	kindValue
	kindIndex
	kindAnyItem
)

type element struct {
	kind  elemKind
	name  string      // kindField
	key   []keyField  // kindKey, sorted by name
	value value.Value // kindValue
	index int         // kindIndex
}

type keyField struct {
	name  string
	value value.Value
}

// SyntaxError is a pattern that cannot be parsed. Pos is the 0-based byte
// offset in Pattern where the problem was found.
type SyntaxError struct {
	Pattern string
	Pos     int
	Msg     string
}

// Error implements error.
func (e *SyntaxError) Error() string {
	return fmt.Sprintf("field path %q: at position %d: %s", e.Pattern, e.Pos, e.Msg)
}

// ParseAll parses every pattern of list, a config's "paths" field. The
// error names the first bad entry by its index, as "paths[1]: ...", for
// the caller to prefix with where the list stands.
func ParseAll(list []string) ([]Pattern, error) {
	var out []Pattern
	for i, s := range list {
		p, err := Parse(s)
		if err != nil {
			return nil, fmt.Errorf("paths[%d]: %w", i, err)
		}
		out = append(out, p)
	}
	return out, nil
}

// Parse parses a field-path pattern such as
// ".spec.template.spec.containers[*].image". The pattern must start with
// "." or "[" and may not be empty.
func Parse(s string) (Pattern, error) {
	p := parser{src: s}
	if strings.TrimSpace(s) == "" {
		return Pattern{}, p.errf(0, "empty path: write a path such as .spec.replicas")
	}
	if !utf8.ValidString(s) {
		for i, r := range s {
			if r == utf8.RuneError {
				return Pattern{}, p.errf(i, "not valid UTF-8")
			}
		}
	}
	for p.pos < len(s) {
		switch s[p.pos] {
		case '.':
			if err := p.field(); err != nil {
				return Pattern{}, err
			}
		case '[':
			if err := p.item(); err != nil {
				return Pattern{}, err
			}
		default:
			if p.pos == 0 {
				return Pattern{}, p.errf(0, "a path starts with \".\" (a field) or \"[\" (a list item), e.g. .spec.replicas")
			}
			return Pattern{}, p.errf(p.pos, "unexpected %q: expected \".\" or \"[\"", s[p.pos])
		}
	}
	return Pattern{elems: p.elems, src: s}, nil
}

// MustParse is Parse for patterns known at compile time; it panics on a
// syntax error.
func MustParse(s string) Pattern {
	p, err := Parse(s)
	if err != nil {
		panic(err)
	}
	return p
}

// String returns the pattern in canonical notation: Parse(p.String())
// yields an equal pattern.
func (p Pattern) String() string {
	var b strings.Builder
	for _, e := range p.elems {
		switch e.kind {
		case kindField:
			b.WriteByte('.')
			if needsQuote(e.name) {
				b.WriteString(jsonQuote(e.name))
			} else {
				b.WriteString(e.name)
			}
		case kindAnyField:
			b.WriteString(".*")
		case kindKey:
			b.WriteByte('[')
			for i, k := range e.key {
				if i > 0 {
					b.WriteByte(',')
				}
				b.WriteString(k.name)
				b.WriteByte('=')
				b.WriteString(formatValue(k.value))
			}
			b.WriteByte(']')
		case kindValue:
			b.WriteString("[=")
			b.WriteString(formatValue(e.value))
			b.WriteByte(']')
		case kindIndex:
			fmt.Fprintf(&b, "[%d]", e.index)
		case kindAnyItem:
			b.WriteString("[*]")
		}
	}
	return b.String()
}

// Len returns the number of path elements in the pattern.
func (p Pattern) Len() int { return len(p.elems) }

// Matches reports whether path is matched by the pattern, that is whether
// path is the pattern's path or lies below it.
func (p Pattern) Matches(path fieldpath.Path) bool {
	if len(path) < len(p.elems) {
		return false
	}
	for i, e := range p.elems {
		if !e.matches(path[i]) {
			return false
		}
	}
	return true
}

// Below reports whether the pattern names something strictly below path:
// path is shorter than the pattern and each of its elements is matched by
// the pattern's element at the same position. The planner uses it to find
// patterns that reach inside an atomic list or map.
func (p Pattern) Below(path fieldpath.Path) bool {
	if len(path) >= len(p.elems) {
		return false
	}
	for i, pe := range path {
		if !p.elems[i].matches(pe) {
			return false
		}
	}
	return true
}

func (e element) matches(pe fieldpath.PathElement) bool {
	switch e.kind {
	case kindField:
		return pe.FieldName != nil && *pe.FieldName == e.name
	case kindAnyField:
		return pe.FieldName != nil
	case kindAnyItem:
		return pe.Key != nil || pe.Value != nil || pe.Index != nil
	case kindIndex:
		return pe.Index != nil && *pe.Index == e.index
	case kindValue:
		return pe.Value != nil && value.Equals(*pe.Value, e.value)
	case kindKey:
		if pe.Key == nil || len(*pe.Key) != len(e.key) {
			return false
		}
		for _, k := range e.key {
			found := false
			for _, f := range *pe.Key {
				if f.Name == k.name {
					found = value.Equals(f.Value, k.value)
					break
				}
			}
			if !found {
				return false
			}
		}
		return true
	}
	return false
}

// formatValue writes a scalar as Parse reads it back: strings JSON-quoted
// (value.ToString quotes them Go's way, with escapes such as \x7f that
// JSON does not have), other scalars as value.ToString does.
func formatValue(v value.Value) string {
	if v.IsString() {
		return jsonQuote(v.AsString())
	}
	return value.ToString(v)
}

// jsonQuote quotes s as a JSON string, which Parse reads back (Go's
// strconv.Quote escapes, such as \x00, are not JSON).
func jsonQuote(s string) string {
	var b strings.Builder
	enc := json.NewEncoder(&b)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(s) // a string always encodes
	return strings.TrimSuffix(b.String(), "\n")
}

func needsQuote(name string) bool {
	return name == "" || strings.Contains(name, "*") || strings.ContainsAny(name, ".[]\"=, \t\n")
}

type parser struct {
	src   string
	pos   int
	elems []element
}

func (p *parser) errf(pos int, format string, args ...any) error {
	return &SyntaxError{Pattern: p.src, Pos: pos, Msg: fmt.Sprintf(format, args...)}
}

// field parses ".name", ".*" or ."quoted".
func (p *parser) field() error {
	start := p.pos
	p.pos++ // '.'
	if p.pos >= len(p.src) {
		return p.errf(start, "a field name must follow \".\"")
	}
	if p.src[p.pos] == '"' {
		name, n, err := quoted(p.src[p.pos:])
		if err != nil {
			return p.errf(p.pos, "bad quoted field name: %v", err)
		}
		p.pos += n
		p.elems = append(p.elems, element{kind: kindField, name: name})
		return nil
	}
	end := p.pos
	for end < len(p.src) && p.src[end] != '.' && p.src[end] != '[' {
		if c := p.src[end]; c == ']' || c == '"' || c == '=' || c == ',' {
			return p.errf(end, "unexpected %q in a field name: quote the name, e.g. .\"a.b\"", c)
		}
		end++
	}
	name := p.src[p.pos:end]
	if name == "" {
		return p.errf(start, "a field name must follow \".\"")
	}
	p.pos = end
	if name == "*" {
		p.elems = append(p.elems, element{kind: kindAnyField})
		return nil
	}
	if strings.Contains(name, "*") {
		return p.errf(start+1, "\"*\" must be a whole field name, not part of %q", name)
	}
	p.elems = append(p.elems, element{kind: kindField, name: name})
	return nil
}

// keyFirst reports whether rest (after "[") is a key selector whose first
// key name starts like an index ("[0=a]", "[3x=1]"): an "=" comes before
// the "]".
func keyFirst(rest string) bool {
	eq, end := strings.IndexByte(rest, '='), strings.IndexByte(rest, ']')
	return eq >= 0 && (end < 0 || eq < end)
}

// item parses "[*]", "[3]", "[=value]" or "[k=v,k2=v2]".
func (p *parser) item() error {
	start := p.pos
	p.pos++ // '['
	rest := p.src[p.pos:]
	switch {
	case strings.HasPrefix(rest, "*]"):
		p.pos += 2
		p.elems = append(p.elems, element{kind: kindAnyItem})
		return nil
	case strings.HasPrefix(rest, "="):
		p.pos++
		v, err := p.value()
		if err != nil {
			return err
		}
		if err := p.expect(']', start); err != nil {
			return err
		}
		p.elems = append(p.elems, element{kind: kindValue, value: v})
		return nil
	case len(rest) > 0 && (rest[0] >= '0' && rest[0] <= '9' || rest[0] == '-') && !keyFirst(rest):
		end := strings.IndexByte(rest, ']')
		if end < 0 {
			return p.errf(start, "unterminated \"[\": add \"]\"")
		}
		n, err := strconv.Atoi(rest[:end])
		if err != nil || n < 0 {
			return p.errf(p.pos, "list index %q is not a non-negative integer", rest[:end])
		}
		p.pos += end + 1
		p.elems = append(p.elems, element{kind: kindIndex, index: n})
		return nil
	}
	var key []keyField
	for {
		nameStart := p.pos
		eq := strings.IndexByte(p.src[p.pos:], '=')
		if eq < 0 {
			return p.errf(start, "a list item is [*], [N], [=value] or [key=value,...]")
		}
		name := p.src[p.pos : p.pos+eq]
		if name == "" || strings.ContainsAny(name, ".[]\", ") {
			return p.errf(nameStart, "bad key field name %q in a list item selector", name)
		}
		p.pos += eq + 1
		v, err := p.value()
		if err != nil {
			return err
		}
		for _, k := range key {
			if k.name == name {
				return p.errf(nameStart, "key field %q given twice", name)
			}
		}
		key = append(key, keyField{name: name, value: v})
		if p.pos < len(p.src) && p.src[p.pos] == ',' {
			p.pos++
			continue
		}
		if err := p.expect(']', start); err != nil {
			return err
		}
		break
	}
	sort.Slice(key, func(i, j int) bool { return key[i].name < key[j].name })
	p.elems = append(p.elems, element{kind: kindKey, key: key})
	return nil
}

func (p *parser) expect(c byte, open int) error {
	if p.pos >= len(p.src) {
		return p.errf(open, "unterminated \"[\": add %q", c)
	}
	if p.src[p.pos] != c {
		return p.errf(p.pos, "expected %q, found %q", c, p.src[p.pos])
	}
	p.pos++
	return nil
}

// value parses a JSON scalar: a quoted string, a number, true, false or
// null.
func (p *parser) value() (value.Value, error) {
	start := p.pos
	if start >= len(p.src) {
		return nil, p.errf(start, "a value must follow \"=\"")
	}
	if p.src[start] == '"' {
		s, n, err := quoted(p.src[start:])
		if err != nil {
			return nil, p.errf(start, "bad quoted value: %v", err)
		}
		p.pos += n
		return value.NewValueInterface(s), nil
	}
	end := start
	for end < len(p.src) && p.src[end] != ',' && p.src[end] != ']' {
		end++
	}
	raw := p.src[start:end]
	var v any
	d := json.NewDecoder(strings.NewReader(raw))
	d.UseNumber()
	if err := d.Decode(&v); err != nil || d.More() {
		return nil, p.errf(start, "value %q is not a JSON scalar: quote strings, e.g. name=\"app\"", raw)
	}
	switch x := v.(type) {
	case json.Number:
		if i, err := x.Int64(); err == nil {
			v = i
		} else if f, err := x.Float64(); err == nil {
			v = f
		}
	case map[string]any, []any:
		return nil, p.errf(start, "value %q is not a scalar", raw)
	}
	p.pos = end
	return value.NewValueInterface(v), nil
}

// quoted reads a JSON string at the start of s and returns it and the
// number of bytes consumed.
func quoted(s string) (string, int, error) {
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			i++
		case '"':
			var out string
			if err := json.Unmarshal([]byte(s[:i+1]), &out); err != nil {
				return "", 0, err
			}
			return out, i + 1, nil
		}
	}
	return "", 0, fmt.Errorf("missing closing quote")
}
