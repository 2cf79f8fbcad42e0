package config

import (
	"regexp"
	"slices"

	"k8s.io/apimachinery/pkg/util/validation"
)

// VariableNameRE is the rule for substitution variable names, Flux's
// (kustomize-controller's varsubRegex): a letter or underscore, then
// letters, digits and underscores.
var VariableNameRE = regexp.MustCompile(`^[_[:alpha:]][_[:alpha:][:digit:]]*$`)

// substitution checks an app's substitute, substituteFrom and
// substituteStrict; p is the app's field.
func (v *validator) substitution(p string, a App) {
	names := make([]string, 0, len(a.Substitute))
	for name := range a.Substitute {
		names = append(names, name)
	}
	slices.Sort(names)
	for _, name := range names {
		if !VariableNameRE.MatchString(name) {
			v.errorf(p+".substitute."+name, "%q is not a variable name: use letters, digits and underscores, not starting with a digit (%s)", name, VariableNameRE)
		}
	}
	for i, s := range a.SubstituteFrom {
		v.substituteSource(index(p+".substituteFrom", i), s)
	}
	if a.SubstituteStrict != nil && !a.Substitutes() {
		v.errorf(p+".substituteStrict", "substituteStrict has no effect without substitute or substituteFrom; remove it, or set variables")
	}
}

// substituteSource checks one entry of substituteFrom; sp is its field.
func (v *validator) substituteSource(sp string, s SubstituteSource) {
	switch {
	case s.File != "" && (s.Kind != "" || s.Name != ""):
		v.errorf(sp, "file and kind/name are both set; an entry is either a file on syncd's side or a ConfigMap or Secret in syncd's namespace")
		return
	case s.File != "":
		return
	case s.Kind == "" && s.Name == "":
		v.errorf(sp, "set file (a YAML file of NAME: value lines), or kind (ConfigMap or Secret) and name")
		return
	}
	switch s.Kind {
	case SubstituteConfigMap, SubstituteSecret:
	case "":
		v.errorf(sp+".kind", "kind is required with name; use ConfigMap or Secret")
	default:
		v.errorf(sp+".kind", "%q is not a kind variables come from; use ConfigMap or Secret (or file)", s.Kind)
	}
	if s.Name == "" {
		v.errorf(sp+".name", "name is required; name the %s in syncd's namespace", s.Kind)
	} else if errs := validation.IsDNS1123Subdomain(s.Name); len(errs) > 0 {
		v.errorf(sp+".name", "%q is not a valid object name: %s", s.Name, errs[0])
	}
}
