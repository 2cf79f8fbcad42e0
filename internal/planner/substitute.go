package planner

import (
	"fmt"
	"slices"
	"strings"

	"github.com/fluxcd/pkg/envsubst"
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
// object, with Flux's postBuild semantics: on the YAML of each object,
// written anew from it (so a variable may stand for a number or a
// boolean, quoted in the source or not),
// $${NAME} for a literal ${NAME}, and objects annotated or labelled
// kustomize.toolkit.fluxcd.io/substitute: disabled or
// syncd.dev/substitute: disabled left alone.
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

// object returns m's object with its variables replaced.
func (s *Substitution) object(m Manifest) (*unstructured.Unstructured, error) {
	text, err := objectYAML(m)
	if err != nil {
		return nil, err
	}
	lk := &lookup{s: s}
	out, err := envsubst.Eval(text, lk.value)
	if err != nil {
		return nil, s.evalError(text, err)
	}
	obj, err := parseDocument([]byte(out))
	if err == nil {
		err = checkObject(obj)
	}
	if err != nil {
		if len(lk.sensitive) > 0 {
			return nil, fmt.Errorf("after substitution the object is no longer a valid manifest (the error is not shown: it may quote a value of %s, which are sensitive); check where the object uses them", strings.Join(lk.sensitiveNames(), ", "))
		}
		return nil, fmt.Errorf("after substitution: %w", err)
	}
	if len(lk.sensitive) > 0 {
		if err := s.checkSensitive(text, obj, lk); err != nil {
			return nil, err
		}
	}
	return obj, nil
}

// lookup answers envsubst's questions about variables and remembers the
// sensitive ones it gave out.
type lookup struct {
	s         *Substitution
	sensitive map[string]bool
	// probe, when set, answers for sensitive variables instead of their
	// values (see checkSensitive).
	probe func(name string) string
}

func (l *lookup) value(name string) (string, bool) {
	v, ok := l.s.Variables[name]
	if !ok {
		return "", l.s.Unset == UnsetEmpty
	}
	if !v.Sensitive {
		return v.Value, true
	}
	if l.sensitive == nil {
		l.sensitive = map[string]bool{}
	}
	l.sensitive[name] = true
	if l.probe != nil {
		return l.probe(name), true
	}
	return v.Value, true
}

// sensitiveNames names the sensitive variables given out and where they
// came from, sorted.
func (l *lookup) sensitiveNames() []string {
	var out []string
	for name := range l.sensitive {
		out = append(out, fmt.Sprintf("%s (from %s)", name, l.s.Variables[name].Source))
	}
	slices.Sort(out)
	return out
}

// errUnsetText starts envsubst's strict-mode error.
const errUnsetText = "variable not set (strict mode)"

// evalError explains a failed substitution, naming the field that holds
// the expression when it can be found.
func (s *Substitution) evalError(text string, err error) error {
	field, name := locateFailure(text, s)
	where := ""
	if field != "" {
		where = " at " + field
	}
	if strings.HasPrefix(err.Error(), errUnsetText) && name != "" {
		return fmt.Errorf("variable %s%s is not set: set it in the app's substitute or substituteFrom, give it a default (${%s:=value}), or write $${%s} for a literal ${%s}", name, where, name, name, name)
	}
	return fmt.Errorf("variable substitution%s: %w", where, err)
}
