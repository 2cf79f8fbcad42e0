package importer

import (
	"fmt"
	"regexp"
	"slices"
	"strconv"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// valueType is the type of a value of an imported object, as a warning
// names it.
type valueType string

// Value types.
const (
	stringType valueType = "a string"
	boolType   valueType = "a boolean"
	numberType valueType = "a number"
	mapType    valueType = "a map"
	listType   valueType = "a list"
	nullType   valueType = "empty"
)

// typeOf is the type of a decoded YAML or JSON value.
func typeOf(v any) valueType {
	switch v.(type) {
	case nil:
		return nullType
	case string:
		return stringType
	case bool:
		return boolType
	case map[string]any:
		return mapType
	case []any:
		return listType
	}
	return numberType
}

// problem is why an object is not imported: a field of the wrong type,
// or a key given twice. It never holds the value, which may be a
// credential.
type problem struct {
	// field is the field path (spec.url), "" when not known.
	field string
	// what says what is wrong and how to fix it.
	what string
}

// wrongType records that the value v at field is not of type want.
func (im *importer) wrongType(field string, want valueType, v any) {
	got := typeOf(v)
	im.typeErrors = append(im.typeErrors, problem{field: field, what: fmt.Sprintf("must be %s, not %s: %s", want, got, typeFix(want, got))})
}

// typeFix says how to write a value of type want where one of type got
// is.
func typeFix(want, got valueType) string {
	switch {
	case want == stringType && (got == numberType || got == boolType):
		return `quote the value, so that YAML reads it as a string (tag: "1.10", not tag: 1.10)`
	case want == stringType && got == listType:
		return "give one value, not a list"
	case want == boolType:
		return "write true or false without quotes"
	case want == mapType:
		return "write its fields on the lines below it, indented (key: value)"
	case want == listType:
		return "write each item on a line of its own, starting with -"
	}
	return "write " + string(want) + " there"
}

// problems are why d is not imported: its keys given twice, a metadata
// field of the wrong type, or the typeErrors that mapping d records.
// The mapping is the one place that knows the type of each field it
// reads, so it is run on a scratch importer first, and its result
// thrown away: the object is imported whole, or not at all.
func (im *importer) problems(d Document, mapping func(*importer, Document)) []problem {
	out := slices.Clone(d.duplicates)
	meta := im.asMap("metadata", d.Object.Object["metadata"])
	for _, key := range []string{"name", "namespace"} {
		if v, ok := meta[key]; ok {
			if _, isString := v.(string); !isString {
				im.wrongType("metadata."+key, stringType, v)
			}
		}
	}
	out = append(out, im.takeTypeErrors()...)
	if len(out) > 0 {
		return out
	}
	scratch := newImporter(im.tool, im.opts)
	mapping(scratch, d)
	return scratch.typeErrors
}

// takeTypeErrors returns the typeErrors recorded, and forgets them.
func (im *importer) takeTypeErrors() []problem {
	out := im.typeErrors
	im.typeErrors = nil
	return out
}

// refuse warns, for each problem, that d is not imported, and records
// it so that the objects naming it say why it is missing.
func (im *importer) refuse(d Document, problems []problem) {
	tool := "Flux"
	if im.tool == ArgoCD {
		tool = "Argo CD"
	}
	for _, p := range problems {
		im.warn(d, p.field, "%s; the %s is not imported (%s would not accept it either): fix it and import again", p.what, d.Object.GetKind(), tool)
	}
	if kind, ok := refusedKinds[d.Object.GetKind()]; ok {
		im.refused[kind+"/"+im.targetNamespace(d)+"/"+d.Object.GetName()] = true
	}
}

// refusedKinds are the syncd kinds made from the imported kinds, by
// which other objects name them.
var refusedKinds = map[string]string{
	"GitRepository":  v1alpha1.KindGitSource,
	"HelmRepository": v1alpha1.KindHelmSource,
	"OCIRepository":  v1alpha1.KindOCISource,
	"Kustomization":  v1alpha1.KindApp,
	"HelmRelease":    v1alpha1.KindApp,
	"Application":    v1alpha1.KindApp,
}

// duplicateKeyRE finds each key given twice in the error of a strict
// YAML decode.
var duplicateKeyRE = regexp.MustCompile(`line (\d+): key ("(?:[^"\\]|\\.)*") already set in map`)

// duplicateKeys are the problems of the keys given twice that err (of a
// strict decode of a document starting at line firstLine of its file,
// 0 if not known) names: the message names the key and its line, never
// a value.
func duplicateKeys(err error, firstLine int) []problem {
	var out []problem
	for _, m := range duplicateKeyRE.FindAllStringSubmatch(err.Error(), -1) {
		key, uerr := strconv.Unquote(m[2])
		if uerr != nil {
			key = m[2]
		}
		where := "line " + m[1] + " of the document"
		if n, nerr := strconv.Atoi(m[1]); nerr == nil && firstLine > 0 {
			where = "line " + strconv.Itoa(firstLine+n-1)
		}
		out = append(out, problem{what: fmt.Sprintf("key %q is given twice (again at %s), and which value is meant is not clear: remove one", key, where)})
	}
	return out
}
