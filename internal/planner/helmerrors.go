package planner

import (
	"errors"
	"regexp"

	"syncd.dev/syncd/internal/redact"
)

// quoted matches what Helm's and its libraries' messages quote: a
// template's or a function's argument, a schema's offending value.
var quoted = regexp.MustCompile("\"(?:[^\"\\\\]|\\\\.)*\"|'[^'\\n]*'|`[^`]*`")

// scrubHelm hides what a Helm message may carry of the values: every
// quoted string, and what redact.Text recognizes. The template, file,
// line and column Helm names stay ("template: app/templates/a.yaml:3:11:
// ..."), so does the message's shape.
func scrubHelm(msg string) string {
	return quoted.ReplaceAllString(redact.Text(msg), redact.Marker)
}

// helmError is a Helm error of one step (load, values, template),
// scrubbed as scrubHelm does.
func helmError(step string, err error) error {
	return errors.New(step + ": " + scrubHelm(err.Error()))
}
