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
// redact.Text recognizes. The template, file, line and column Helm names
// stay ("template: app/templates/a.yaml:3:11: ..."), so does the
// message's shape.
func scrubHelm(msg string) string {
	msg = badVerb.ReplaceAllString(msg, redact.Marker)
	return quoted.ReplaceAllString(redact.Text(msg), redact.Marker)
}

// helmError is a Helm error of one step (load, values, template),
// scrubbed as scrubHelm does.
func helmError(step string, err error) error {
	return errors.New(step + ": " + scrubHelm(err.Error()))
}
