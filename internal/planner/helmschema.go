package planner

import (
	"bytes"
	"errors"
	"fmt"
	"path"
	"strings"

	"github.com/santhosh-tekuri/jsonschema/v6"
	"github.com/santhosh-tekuri/jsonschema/v6/kind"
	"golang.org/x/text/language"
	"golang.org/x/text/message"
	chart "helm.sh/helm/v4/pkg/chart/v2"
)

// schemaFile is the file of a chart's values schema.
const schemaFile = "values.schema.json"

// schemaURL is where a chart's schema is compiled from: a name only; no
// file is read at it (see refusingLoader).
const schemaURL = "file:///" + schemaFile

// schemaPrinter formats schema messages in English, as helm does.
var schemaPrinter = message.NewPrinter(language.English)

// validateSchemas checks vals (the coalesced values of the chart whose
// directory is rel in the repository) against the values.schema.json of
// the chart and of every subchart left after its conditions and tags, each
// subchart against the values under its name, as helm install does. A
// schema's $ref reaches only into the schema itself: syncd loads no schema
// from the network or the local disk, where helm would. The error names
// each schema file and every value that fails, by its path in the values
// (/image/tag), never by its content.
func validateSchemas(ch *chart.Chart, vals map[string]any, rel string) error {
	var problems []string
	walkSchemas(ch, vals, schemaScope{dir: rel}, &problems)
	if len(problems) == 0 {
		return nil
	}
	return &schemaError{problems: problems}
}

// schemaError is a failed values schema check: one line per problem, each
// naming its schema file by its path in the repository already, so the
// message is not rewritten from Helm's chart-name paths (see inRepo).
type schemaError struct {
	problems []string
}

func (e *schemaError) Error() string {
	return "the values schema check failed:\n" + strings.Join(e.problems, "\n")
}

// schemaScope is where a (sub)chart sits: its directory in the repository
// and the path of its values in the top chart's values.
type schemaScope struct {
	dir    string
	values []string
}

// sub returns the scope of the subchart name.
func (s schemaScope) sub(name string) schemaScope {
	return schemaScope{dir: path.Join(s.dir, "charts", name), values: append(append([]string(nil), s.values...), name)}
}

// walkSchemas validates one chart's values and recurses into its
// subcharts, appending one line per problem.
func walkSchemas(ch *chart.Chart, vals map[string]any, at schemaScope, problems *[]string) {
	if len(ch.Schema) > 0 {
		for _, p := range checkSchema(ch.Schema, vals, at) {
			*problems = append(*problems, path.Join(at.dir, schemaFile)+": "+p)
		}
	}
	for _, sub := range ch.Dependencies() {
		// Helm's coalescing refused values of a subchart that are not a
		// mapping before this runs.
		subVals, ok := vals[sub.Name()].(map[string]any)
		if !ok {
			continue
		}
		walkSchemas(sub, subVals, at.sub(sub.Name()), problems)
	}
}

// checkSchema validates vals against one schema document, returning its
// problems; a schema that does not compile is one problem.
func checkSchema(data []byte, vals map[string]any, at schemaScope) []string {
	schema, err := compileSchema(data)
	if err != nil {
		return []string{err.Error()}
	}
	err = schema.Validate(vals)
	var verr *jsonschema.ValidationError
	if err == nil {
		return nil
	}
	if !errors.As(err, &verr) {
		return []string{"validation failed: " + scrubHelm(err.Error())}
	}
	var out []string
	collectProblems(verr, at.values, 0, &out)
	return out
}

// compileSchema compiles a chart's schema with every external $ref
// refused, naming the reference.
func compileSchema(data []byte) (*jsonschema.Schema, error) {
	doc, err := jsonschema.UnmarshalJSON(bytes.NewReader(data))
	if err != nil {
		return nil, errors.New("not JSON: " + scrubHelm(err.Error()))
	}
	loader := &refusingLoader{}
	c := jsonschema.NewCompiler()
	c.UseLoader(loader)
	if err := c.AddResource(schemaURL, doc); err != nil {
		return nil, errors.New("not a JSON schema: " + scrubHelm(err.Error()))
	}
	schema, err := c.Compile(schemaURL)
	if loader.refused != "" {
		return nil, fmt.Errorf("$ref %s: syncd loads no schema from outside %s (no network, no local files, where helm would fetch it); copy the referenced schema into the file's $defs", loader.refused, schemaFile)
	}
	if err != nil {
		return nil, errors.New("not a valid JSON schema: " + scrubHelm(err.Error()))
	}
	return schema, nil
}

// refusingLoader is the schema compiler's loader of external references:
// it loads none, and remembers the first it was asked for. An urn: is
// read as the permissive schema true, as helm reads one it cannot resolve.
type refusingLoader struct {
	refused string
}

// Load refuses url, but for an urn:.
func (l *refusingLoader) Load(url string) (any, error) {
	if strings.HasPrefix(url, "urn:") {
		return true, nil
	}
	if l.refused == "" {
		l.refused = url
	}
	return nil, errors.New("external schemas are not loaded")
}

// collectProblems appends one line per failure in e's tree, indented by
// depth, each naming the value's path (prefix, then e's location).
// Grouping nodes add no line of their own.
func collectProblems(e *jsonschema.ValidationError, prefix []string, depth int, out *[]string) {
	switch e.ErrorKind.(type) {
	case *kind.Schema, *kind.Group, *kind.Reference:
	default:
		loc := append(append([]string(nil), prefix...), e.InstanceLocation...)
		*out = append(*out, strings.Repeat("  ", depth)+"at "+valuePointer(loc)+": "+schemaMessage(e.ErrorKind))
		depth++
	}
	for _, cause := range e.Causes {
		collectProblems(cause, prefix, depth, out)
	}
}

// valuePointer writes a path in the values as a JSON pointer ("/" for
// the values themselves).
func valuePointer(tokens []string) string {
	if len(tokens) == 0 {
		return "/"
	}
	r := strings.NewReplacer("~", "~0", "/", "~1")
	var b strings.Builder
	for _, t := range tokens {
		b.WriteString("/" + r.Replace(t))
	}
	return b.String()
}

// schemaMessage says what is wrong with a value without showing it: the
// schema's own words (types, property names, allowed values, patterns),
// never the value that failed. Kinds this does not know are scrubbed as
// any Helm message is.
func schemaMessage(k jsonschema.ErrorKind) string {
	switch k := k.(type) {
	case *kind.Pattern:
		return "does not match the pattern " + k.Want
	case *kind.Format:
		return "is not a valid " + k.Want
	case *kind.ContentEncoding:
		return "is not " + k.Want + " encoded"
	case *kind.ContentMediaType:
		return "is not of media type " + k.Want
	case *kind.Minimum:
		return "below the minimum " + k.Want.RatString()
	case *kind.Maximum:
		return "above the maximum " + k.Want.RatString()
	case *kind.ExclusiveMinimum:
		return "not above the exclusive minimum " + k.Want.RatString()
	case *kind.ExclusiveMaximum:
		return "not below the exclusive maximum " + k.Want.RatString()
	case *kind.MultipleOf:
		return "not a multiple of " + k.Want.RatString()
	case *kind.MinLength:
		return fmt.Sprintf("shorter than the minimum length %d", k.Want)
	case *kind.MaxLength:
		return fmt.Sprintf("longer than the maximum length %d", k.Want)
	case *kind.Type, *kind.Enum, *kind.Const, *kind.Required, *kind.AdditionalProperties,
		*kind.Dependency, *kind.DependentRequired, *kind.PropertyNames,
		*kind.MinProperties, *kind.MaxProperties, *kind.MinItems, *kind.MaxItems,
		*kind.AdditionalItems, *kind.UniqueItems, *kind.Contains, *kind.MinContains, *kind.MaxContains,
		*kind.Not, *kind.AllOf, *kind.AnyOf, *kind.OneOf, *kind.FalseSchema:
		// Types, property names, counts and the schema's own values.
		return k.LocalizedString(schemaPrinter)
	}
	return scrubHelm(k.LocalizedString(schemaPrinter))
}
