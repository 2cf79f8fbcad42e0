package planner

import (
	"fmt"
	"reflect"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"
)

// probePrefix starts the stand-in a sensitive variable gets in the probe
// substitution.
const probePrefix = "syncd-sensitive-probe-"

// checkSensitive refuses an object in which a sensitive value lands where
// syncd would print it. It substitutes text again with stand-ins for the
// sensitive values and compares the objects: the fields that
// differ are those the sensitive values reach. Each must be a field the
// app's redaction rules hide; none may be part of the object's identity
// or a map key, which are printed whatever the rules say.
func (s *Substitution) checkSensitive(text string, real *unstructured.Unstructured, used *lookup) error {
	names := strings.Join(used.sensitiveNames(), ", ")
	found, err := s.probe(text, real)
	if err != nil {
		return fmt.Errorf("the sensitive variables %s change the object's structure; a sensitive value may only be a field's value", names)
	}
	gk := real.GroupVersionKind().GroupKind()
	var printed []string
	for _, r := range found {
		switch {
		case isIdentityPath(r.path):
			printed = append(printed, r.String()+" (the object's identity)")
		case r.keys:
			printed = append(printed, r.String()+" (its keys)")
		case !s.Sensitive.Path(gk, r.path):
			printed = append(printed, r.String())
		}
	}
	if len(printed) == 0 {
		return nil
	}
	return fmt.Errorf("the sensitive variables %s land in %s, which syncd prints: substitute them only into a Secret's data or stringData, or into fields an apps[].sensitive rule for this kind covers (paths with [*] for list items)", names, strings.Join(printed, ", "))
}

// probeRounds is how many stand-ins each sensitive variable gets. They
// differ from each other in their first character, case and length, so
// that text derived from a value (${S:0:1}, ${#S}, ${S^^}) that happens
// to equal one stand-in's differs from the other's.
const probeRounds = 2

// probe substitutes text with stand-ins for the sensitive values, once per
// round, and returns every field at which a result differs from real,
// each once, sorted.
func (s *Substitution) probe(text string, real *unstructured.Unstructured) ([]reach, error) {
	var found []reach
	seen := map[string]bool{}
	for round := range probeRounds {
		lk := &lookup{s: s, probe: func(name string) string { return s.probeValue(name, round) }}
		out, err := envsubst.Eval(text, lk.value)
		if err != nil {
			return nil, err
		}
		probed, err := parseDocument([]byte(out))
		if err != nil {
			return nil, err
		}
		for _, r := range reached(real.Object, probed.Object, nil) {
			if key := r.String(); !seen[key] {
				seen[key] = true
				found = append(found, r)
			}
		}
	}
	slices.SortFunc(found, func(a, b reach) int { return strings.Compare(a.String(), b.String()) })
	return found, nil
}

// probeValue is a stand-in for a sensitive variable in a round: a string
// its value does not equal.
func (s *Substitution) probeValue(name string, round int) string {
	p := probePrefix + name
	if round == 1 {
		p = "#PROBE#" + strings.Repeat("#", len(s.Variables[name].Value)+1) + name
	}
	for p == s.Variables[name].Value {
		p += "-"
	}
	return p
}

// reach is a field whose value (or, with keys, whose set of keys) differs
// between two substitutions.
type reach struct {
	path fieldpath.Path
	keys bool
}

func (r reach) String() string {
	if len(r.path) == 0 {
		return "."
	}
	return r.path.String()
}

// reached returns the shallowest fields at which a and b differ, at path p.
func reached(a, b any, p fieldpath.Path) []reach {
	switch av := a.(type) {
	case map[string]any:
		bv, ok := b.(map[string]any)
		if !ok {
			return []reach{{path: p.Copy()}}
		}
		keys := sortedKeys(av)
		if !slices.Equal(keys, sortedKeys(bv)) {
			return []reach{{path: p.Copy(), keys: true}}
		}
		var out []reach
		for _, k := range keys {
			out = append(out, reached(av[k], bv[k], append(p, fieldpath.PathElement{FieldName: &k}))...)
		}
		return out
	case []any:
		bv, ok := b.([]any)
		if !ok || len(av) != len(bv) {
			return []reach{{path: p.Copy()}}
		}
		var out []reach
		for i := range av {
			out = append(out, reached(av[i], bv[i], append(p, fieldpath.PathElement{Index: &i}))...)
		}
		return out
	}
	if !reflect.DeepEqual(a, b) {
		return []reach{{path: p.Copy()}}
	}
	return nil
}

func sortedKeys(m map[string]any) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	return keys
}

// isIdentityPath reports whether p is or holds apiVersion, kind, or
// metadata.name, namespace or generateName: printed in every report.
func isIdentityPath(p fieldpath.Path) bool {
	if len(p) == 0 {
		return true
	}
	top := p[0].FieldName
	if top == nil {
		return false
	}
	switch *top {
	case "apiVersion", "kind":
		return true
	case "metadata":
		if len(p) == 1 {
			return true
		}
		f := p[1].FieldName
		return f != nil && (*f == "name" || *f == "namespace" || *f == "generateName")
	}
	return false
}
