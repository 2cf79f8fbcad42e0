package renderproc

// internMax is the longest string value an internTable keeps one copy
// of: longer values (scripts, certificates, config files) are rarely
// repeated.
const internMax = 64

// internTable keeps one copy of each map key and short string value of
// an answer's objects. Decoding JSON allocates every key and string of
// every object anew: a render of 10,000 objects would hold "metadata",
// "name", "namespace" and the like (and the namespace, the apiVersion
// and the kind) 10,000 times each for as long as its plan lives. The
// table is dropped with the decoder; what it shares stays in the objects.
type internTable struct {
	keys map[string]string
	// values are the string values as the objects hold them: in an
	// interface, whose box is shared too.
	values map[string]any
}

func newInternTable() internTable {
	return internTable{keys: map[string]string{}, values: map[string]any{}}
}

// of is t's copy of the key k.
func (t internTable) of(k string) string {
	if c, ok := t.keys[k]; ok {
		return c
	}
	t.keys[k] = k
	return k
}

// intern replaces, in place, the keys of v's maps and its short string
// values by t's copies, and returns v, or t's copy of a string v.
func (t internTable) intern(v any) any {
	switch x := v.(type) {
	case map[string]any:
		for k, e := range x {
			// Assigning under an equal key keeps the map's entry and
			// stores the key given (Go replaces string keys on update),
			// so the decoded key is dropped.
			x[t.of(k)] = t.intern(e)
		}
	case []any:
		for i, e := range x {
			x[i] = t.intern(e)
		}
	case string:
		if len(x) > internMax {
			return v
		}
		if c, ok := t.values[x]; ok {
			return c
		}
		t.values[x] = v
	}
	return v
}
