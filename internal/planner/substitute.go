package planner

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/redact"
)

// UnsetVariables says what substitution does with ${NAME} when NAME is set
// nowhere and the expression gives no default.
type UnsetVariables int

const (
	// UnsetRefused fails the object, naming the variable and the field
	// (Flux's StrictPostBuildSubstitutions feature gate).
	UnsetRefused UnsetVariables = iota
	// UnsetEmpty replaces the expression with the empty string (Flux's
	// default).
	UnsetEmpty
)

// Variable is one value substitution may write into rendered objects.
type Variable struct {
	Value string
	// Sensitive is true for a value from a Secret or a source marked
	// sensitive: it may land only in fields Substitution.Sensitive hides,
	// never in an object's identity or a map key.
	Sensitive bool
	// Source says where the value came from, for errors ("Secret
	// syncd/cluster-vars"); never the value.
	Source string
}

// Substitution replaces ${NAME} and ${NAME:=default} in every rendered
// object, with Flux's postBuild expressions (fluxcd/pkg/envsubst):
// $${NAME} for a literal ${NAME}, and objects annotated or labelled
// kustomize.toolkit.fluxcd.io/substitute: disabled or
// syncd.dev/substitute: disabled left alone. Unlike Flux, which
// substitutes the text of each object's YAML and reads it again, it
// substitutes each string of the decoded object on its own: a value
// lands byte for byte, whatever YAML would make of it (a "#", a leading
// "!", "a: b", a newline). A string made only of expressions may still
// stand for a number or a boolean (see scalar).
type Substitution struct {
	Variables map[string]Variable
	// Unset is UnsetRefused unless set.
	Unset UnsetVariables
	// Sensitive are the app's redaction rules (redact.ForApp): the fields
	// sensitive variables may land in. Nil holds the built-in rules
	// (Secret data and stringData).
	Sensitive *redact.Rules
}

// Annotation (or label) keys that turn substitution off for one object when
// set to SubstituteDisabled.
const (
	SubstituteKey      = "syncd.dev/substitute"
	FluxSubstituteKey  = "kustomize.toolkit.fluxcd.io/substitute"
	SubstituteDisabled = "disabled"
)

// check refuses variable names Flux would refuse.
func (s *Substitution) check() error {
	names := make([]string, 0, len(s.Variables))
	for name := range s.Variables {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !config.VariableNameRE.MatchString(name) {
			return fmt.Errorf("substitution: %q (from %s) is not a variable name: use letters, digits and underscores, not starting with a digit", name, s.Variables[name].Source)
		}
	}
	return nil
}

// substituteDisabled reports whether obj opts out of substitution.
func substituteDisabled(obj *unstructured.Unstructured) bool {
	for _, m := range []map[string]string{obj.GetAnnotations(), obj.GetLabels()} {
		if m[SubstituteKey] == SubstituteDisabled || m[FluxSubstituteKey] == SubstituteDisabled {
			return true
		}
	}
	return false
}

// substitute replaces the variables of every manifest's object, in place,
// recording the manifests that fail.
func (r *planRun) substitute(manifests []Manifest) {
	s := r.p.opts.Substitution
	if s == nil {
		return
	}
	for i := range manifests {
		m := &manifests[i]
		if m.Object == nil || substituteDisabled(m.Object) || !holdsDollar(m.Object.Object) {
			continue
		}
		obj, err := s.object(*m)
		if err != nil {
			r.fail(*m, m.Object, err)
			continue
		}
		m.Object = obj
	}
}

// holdsDollar reports whether a key or a string below v holds a "$":
// without one, substitution leaves an object as it is, and it is skipped
// (writing and reading its YAML is most of the cost).
func holdsDollar(v any) bool {
	switch t := v.(type) {
	case string:
		return strings.Contains(t, "$")
	case map[string]any:
		for k, c := range t {
			if strings.Contains(k, "$") || holdsDollar(c) {
				return true
			}
		}
	case []any:
		for _, c := range t {
			if holdsDollar(c) {
				return true
			}
		}
	}
	return false
}

// object returns m's object with its variables replaced. Each string
// (value or key) is substituted on its own, in the decoded object, so a
// value lands byte for byte where the template put it (see scalar for the
// numbers and booleans a variable may stand for); nothing is read back as
// YAML.
func (s *Substitution) object(m Manifest) (*unstructured.Unstructured, error) {
	w := &walker{s: s}
	out, err := w.value(m.Object.Object, nil)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: out.(map[string]any)}
	if err := checkObject(obj); err != nil {
		return nil, fmt.Errorf("after substitution: %w", err)
	}
	if len(w.sensitive) > 0 {
		if err := s.checkSensitive(obj, w); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// lookup answers envsubst's questions about the variables of one string
// and remembers the variables it gave out and the first one it could not.
type lookup struct {
	s    *Substitution
	used map[string]bool
	// unset is the first variable asked for that is set nowhere.
	unset string
}

func (l *lookup) value(name string) (string, bool) {
	v, ok := l.s.Variables[name]
	if !ok {
		if l.unset == "" {
			l.unset = name
		}
		return "", l.s.Unset == UnsetEmpty
	}
	if l.used == nil {
		l.used = map[string]bool{}
	}
	l.used[name] = true
	return v.Value, true
}

// sensitive reports whether the string used a sensitive variable.
func (l *lookup) sensitive() bool {
	for name := range l.used {
		if l.s.Variables[name].Sensitive {
			return true
		}
	}
	return false
}

// names names the variables given out and where they came from, sorted.
func (l *lookup) names() string { return l.describe(func(Variable) bool { return true }) }

// sensitiveNames names the sensitive variables given out, as names does.
func (l *lookup) sensitiveNames() string {
	return l.describe(func(v Variable) bool { return v.Sensitive })
}

func (l *lookup) describe(keep func(Variable) bool) string {
	var out []string
	for name := range l.used {
		if v := l.s.Variables[name]; keep(v) {
			out = append(out, fmt.Sprintf("%s (from %s)", name, v.Source))
		}
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

// errUnsetText starts envsubst's strict-mode error.
const errUnsetText = "variable not set (strict mode)"

// evalError explains a failed substitution of the string at where (a
// field path, or a map's path and " (a key)"), naming the unset variable
// when that is the cause.
func evalError(where string, lk *lookup, err error) error {
	name := lk.unset
	if strings.HasPrefix(err.Error(), errUnsetText) && name != "" {
		return fmt.Errorf("variable %s at %s is not set: set it in the app's substitute or substituteFrom, give it a default (${%s:=value}), or write $${%s} for a literal ${%s}", name, where, name, name, name)
	}
	return fmt.Errorf("variable substitution at %s: %w", where, err)
}
