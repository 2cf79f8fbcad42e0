package redact

import (
	"slices"
	"strings"
)

// MinFragment is the length, in bytes, of the shortest known secret value
// Secrets looks for inside other text. A shorter value would hide every
// word that happens to contain it ("admin", "5432", "true"); it stays
// hidden as a whole value, by the field rules (Rules.Path: a Secret's
// data, a sensitive path, a field that holds a decrypted value whole),
// but is not searched for in longer strings, error messages or logs.
const MinFragment = 8

// Secrets is a set of values known to be secret (decrypted by SOPS, in a
// Secret's data, at a sensitive path, from a sensitive variable), compiled
// once into an Aho-Corasick automaton: Mask finds every occurrence of
// every value in one pass over the text, whatever the number of values.
// A nil *Secrets holds no value. It is read-only once built and safe for
// concurrent use.
type Secrets struct {
	values []string // sorted, unique, each at least MinFragment long
	nodes  []acNode
}

// acNode is a state of the automaton: the values' common prefixes.
type acNode struct {
	next []acEdge
	fail int32
	// word is the index of the value that ends here, -1 if none.
	word int32
	// dict is the nearest state on the fail chain where a value ends,
	// -1 if none.
	dict int32
	// longest is the length of the longest value that ends here or on
	// the fail chain, 0 if none.
	longest int32
}

type acEdge struct {
	b  byte
	to int32
}

// NewSecrets compiles values: those shorter than MinFragment are left
// out (see MinFragment). It returns nil when none is left.
func NewSecrets(values []string) *Secrets {
	var keep []string
	for _, v := range values {
		if len(v) >= MinFragment {
			keep = append(keep, v)
		}
	}
	if len(keep) == 0 {
		return nil
	}
	slices.Sort(keep)
	s := &Secrets{values: slices.Compact(keep)}
	s.build()
	return s
}

// NewSecretsExcept is NewSecrets without the values in names: a value
// that is also an object's name or namespace is a name, printed in every
// report's object headers whatever is masked (names are never hidden),
// and masking it elsewhere would only hide the names around it.
func NewSecretsExcept(values []string, names map[string]bool) *Secrets {
	keep := values[:0:0]
	for _, v := range values {
		if !names[v] {
			keep = append(keep, v)
		}
	}
	return NewSecrets(keep)
}

// AddNames adds to names the name and namespace of obj (decoded JSON).
func AddNames(names map[string]bool, obj map[string]any) {
	md, _ := obj["metadata"].(map[string]any)
	for _, k := range []string{"name", "namespace"} {
		if v, ok := md[k].(string); ok && v != "" {
			names[v] = true
		}
	}
}

// Union returns one set of the values of every set; nil sets are skipped.
func Union(sets ...*Secrets) *Secrets {
	var all []string
	for _, s := range sets {
		all = append(all, s.Values()...)
	}
	return NewSecrets(all)
}

// Values returns the set's values, sorted.
func (s *Secrets) Values() []string {
	if s == nil {
		return nil
	}
	return slices.Clone(s.values)
}

// Len is the number of values in the set.
func (s *Secrets) Len() int {
	if s == nil {
		return 0
	}
	return len(s.values)
}

// equal reports whether s and o hold the same values.
func (s *Secrets) equal(o *Secrets) bool {
	return slices.Equal(s.Values(), o.Values())
}

// build makes the automaton: a trie of the values, then the fail links
// breadth first.
func (s *Secrets) build() {
	s.nodes = []acNode{{word: -1, dict: -1}}
	for i, v := range s.values {
		n := int32(0)
		for j := 0; j < len(v); j++ {
			to := s.step(n, v[j])
			if to < 0 {
				to = int32(len(s.nodes))
				s.nodes = append(s.nodes, acNode{word: -1, dict: -1})
				s.nodes[n].next = append(s.nodes[n].next, acEdge{b: v[j], to: to})
			}
			n = to
		}
		s.nodes[n].word = int32(i)
		s.nodes[n].longest = int32(len(v))
	}
	queue := []int32{}
	for _, e := range s.nodes[0].next {
		queue = append(queue, e.to)
	}
	for len(queue) > 0 {
		n := queue[0]
		queue = queue[1:]
		for _, e := range s.nodes[n].next {
			f := s.nodes[n].fail
			for f > 0 && s.step(f, e.b) < 0 {
				f = s.nodes[f].fail
			}
			if to := s.step(f, e.b); to >= 0 && to != e.to {
				f = to
			} else {
				f = 0
			}
			c := &s.nodes[e.to]
			c.fail = f
			if s.nodes[f].word >= 0 {
				c.dict = f
			} else {
				c.dict = s.nodes[f].dict
			}
			c.longest = max(c.longest, s.nodes[f].longest)
			queue = append(queue, e.to)
		}
	}
}

// step is the trie edge from n on b, -1 if none.
func (s *Secrets) step(n int32, b byte) int32 {
	for _, e := range s.nodes[n].next {
		if e.b == b {
			return e.to
		}
	}
	return -1
}

// next is the automaton's move from n on b.
func (s *Secrets) next(n int32, b byte) int32 {
	for {
		if to := s.step(n, b); to >= 0 {
			return to
		}
		if n == 0 {
			return 0
		}
		n = s.nodes[n].fail
	}
}

// scan calls at(end, n) for each position of text at which a value ends
// (end is the index after its last byte, n the automaton's state there).
func (s *Secrets) scan(text string, at func(end int, n int32)) {
	n := int32(0)
	for i := 0; i < len(text); i++ {
		n = s.next(n, text[i])
		if s.nodes[n].longest > 0 {
			at(i+1, n)
		}
	}
}

// Mask returns text with every occurrence of every value replaced by
// Marker; overlapping or adjacent occurrences become one Marker. A nil
// set returns text.
func (s *Secrets) Mask(text string) string { return s.MaskWith(text, Marker) }

// MaskWith is Mask with another marker (ChangedMarker).
func (s *Secrets) MaskWith(text, marker string) string {
	if s == nil || len(text) < MinFragment {
		return text
	}
	var spans [][2]int // merged [start, end) of the occurrences, in order
	s.scan(text, func(end int, n int32) {
		start := end - int(s.nodes[n].longest)
		for k := len(spans) - 1; k >= 0 && start <= spans[k][1]; k-- {
			start = min(start, spans[k][0])
			spans = spans[:k]
		}
		spans = append(spans, [2]int{start, end})
	})
	if len(spans) == 0 {
		return text
	}
	var b strings.Builder
	last := 0
	for _, sp := range spans {
		b.WriteString(text[last:sp[0]])
		b.WriteString(marker)
		last = sp[1]
	}
	b.WriteString(text[last:])
	return b.String()
}

// Found returns the values that occur in text, sorted.
func (s *Secrets) Found(text string) []string {
	if s == nil {
		return nil
	}
	seen := map[int32]bool{}
	s.scan(text, func(_ int, n int32) {
		for m := n; m >= 0; m = s.nodes[m].dict {
			if w := s.nodes[m].word; w >= 0 {
				seen[w] = true
			}
		}
	})
	var out []string
	for i, v := range s.values {
		if seen[int32(i)] {
			out = append(out, v)
		}
	}
	return out
}
