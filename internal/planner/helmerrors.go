package planner

import (
	"errors"
	"regexp"

	"syncd.dev/syncd/internal/redact"
)

// quoted matches what Helm's and its libraries' messages quote: a
// template's or a function's argument, a schema's offending value.
var quoted = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'[^'\\n]*'|`[^`]*`")

// badVerb matches what Go's fmt writes for a value printed with a verb
// of the wrong type ("%!t(string=the value)", as Helm's "type mismatch on
// db: %t" does with a string), to the end of the line: the value may hold
// a parenthesis.
var badVerb = regexp.MustCompile(`%!.*`)

// scrubHelm hides what a Helm message may carry of the values: every
// quoted string, a value Go's fmt printed with a wrong verb, and what
// redact.Text recognizes (every secret value the process knows included);
// maskValues hides the chart's values in what is left. The template, file, line and column Helm names
// stay ("template: app/templates/a.yaml:3:11: ..."), so does the
// message's shape.
func scrubHelm(msg string) string {
	msg = badVerb.ReplaceAllString(msg, redact.Marker)
	return quoted.ReplaceAllString(redact.Text(msg), redact.Marker)
}

// valueSecrets are the values an operator gave a chart (helm.values
// inline, and the values files, helm.valuesFiles, merged): every string
// and number in them of at least redact.MinFragment bytes. A chart's own
// values.yaml is not among them: it is public with the chart.
func valueSecrets(vals map[string]any) *redact.Secrets {
	return redact.NewSecrets(valueLeaves(nil, vals))
}

// valueLeaves appends the text of every scalar in v.
func valueLeaves(out []string, v any) []string {
	switch t := v.(type) {
	case map[string]any:
		for _, c := range t {
			out = valueLeaves(out, c)
		}
	case []any:
		for _, c := range t {
			out = valueLeaves(out, c)
		}
	default:
		if text, ok := leafText(t); ok {
			out = append(out, text)
		}
	}
	return out
}

// maskValues hides the operator's values (valueSecrets) wherever a Helm
// message prints them, also where scrubHelm cannot see them: a
// required or fail message that formats a value into its own words
// ("token %s is not accepted"), unquoted.
func maskValues(msg string, vals map[string]any) string {
	return valueSecrets(vals).Mask(msg)
}

// helmError is a Helm error of one step (load, values, template),
// scrubbed as scrubHelm does.
func helmError(step string, err error) error {
	return errors.New(step + ": " + scrubHelm(err.Error()))
}
