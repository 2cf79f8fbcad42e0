package redact

import "strings"

// valueIntroducers precede a value in the error texts syncd relays: the
// API server's field errors (k8s.io/apimachinery field.Error) and
// structured-merge-diff's type errors ("expected string, got …").
var valueIntroducers = []string{
	"Invalid value: ",
	"Unsupported value: ",
	"Duplicate value: ",
	"Not found: ",
	", got ",
}

// dumpIntroducers precede the rest of a message that is a dump of
// content: kyaml's node dumps.
var dumpIntroducers = []string{"node contents:"}

// typeNames are the values ", got %T" prints: a type, not a value.
var typeNames = map[string]bool{
	"string": true, "bool": true, "int64": true, "float64": true, "int": true,
	"map[string]interface {}": true, "[]interface {}": true, "<nil>": true,
}

// Text returns s, an error's text, with the values of known error shapes
// replaced by Marker: the value after "Invalid value: ", "Unsupported
// value: ", "Duplicate value: " and "Not found: " (the API server's field
// errors), after ", got " (structured-merge-diff type errors, unless it is
// a type name), Go map dumps ("map[password:…]"), and the rest of a line
// after kyaml's "node contents:". Every secret value the process knows
// (Remember) is masked first, wherever it appears. Field paths and
// reasons stay.
func Text(s string) string {
	s = Known(s)
	var b strings.Builder
	for len(s) > 0 {
		i, intro := nextIntroducer(s)
		if i < 0 {
			b.WriteString(s)
			break
		}
		b.WriteString(s[:i+len(intro)])
		s = s[i+len(intro):]
		if isDump(intro) {
			b.WriteString(" " + Marker)
			s = skipDump(s)
			continue
		}
		n := valueLen(s)
		if intro == ", got " && typeNames[s[:n]] {
			b.WriteString(s[:n])
		} else if n > 0 {
			b.WriteString(Marker)
		}
		s = s[n:]
	}
	return b.String()
}

// nextIntroducer returns the position of the first introducer in s (a
// value introducer, a dump introducer or a Go map dump), -1 if none.
func nextIntroducer(s string) (int, string) {
	best, which := -1, ""
	consider := func(intro string) {
		if i := strings.Index(s, intro); i >= 0 && (best < 0 || i < best) {
			best, which = i, intro
		}
	}
	for _, intro := range valueIntroducers {
		consider(intro)
	}
	for _, intro := range dumpIntroducers {
		consider(intro)
	}
	if i := mapDump(s); i >= 0 && (best < 0 || i < best) {
		best, which = i, ""
	}
	return best, which
}

// mapDump returns the position of a Go map dump ("map[k:v]") in s: "map["
// not preceded by a letter, -1 if none.
func mapDump(s string) int {
	off := 0
	for {
		i := strings.Index(s[off:], "map[")
		if i < 0 {
			return -1
		}
		i += off
		if i == 0 || !isWordByte(s[i-1]) {
			return i
		}
		off = i + 4
	}
}

func isWordByte(c byte) bool {
	return c == '_' || c == '.' || c >= '0' && c <= '9' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

func isDump(intro string) bool {
	for _, d := range dumpIntroducers {
		if intro == d {
			return true
		}
	}
	return false
}

// skipDump drops a kyaml node dump: everything up to a blank line or the
// end of s.
func skipDump(s string) string {
	if i := strings.Index(s, "\n\n"); i >= 0 {
		return s[i:]
	}
	return ""
}

// valueLen returns the length of the value at the start of s, as Go's %v,
// %#v and %q and encoding/json print it: a quoted string, or a run of
// characters with balanced brackets, up to ": ", ", ", ";", a newline or
// a closing bracket of the enclosing text at depth 0.
func valueLen(s string) int {
	if s == "" {
		return 0
	}
	if s[0] == '"' || s[0] == '`' {
		return quotedLen(s)
	}
	depth := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		switch {
		case c == '"' || c == '`':
			i += quotedLen(s[i:]) - 1
		case c == '{' || c == '[' || c == '(':
			depth++
		case c == '}' || c == ']' || c == ')':
			if depth == 0 {
				return i
			}
			depth--
			if depth == 0 && i+1 < len(s) && s[i+1] == '{' {
				continue // map[string]string{…}
			}
		case depth > 0:
		case c == '\n' || c == ';':
			return i
		case c == ':' || c == ',':
			if i+1 >= len(s) || s[i+1] == ' ' || s[i+1] == '\n' {
				return i
			}
		case c == ' ':
			if strings.HasPrefix(s[i:], " {}") {
				i += 2 // "interface {}"
				continue
			}
			return i
		}
	}
	return len(s)
}

// quotedLen returns the length of the quoted string at the start of s,
// its closing quote included (all of s when it does not close).
func quotedLen(s string) int {
	q := s[0]
	for i := 1; i < len(s); i++ {
		switch s[i] {
		case '\\':
			if q == '"' {
				i++
			}
		case q:
			return i + 1
		}
	}
	return len(s)
}
