package config

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"syncd.dev/syncd/internal/errlist"
)

// FieldError is one problem found in a config file: where it is (File,
// Line, Field) and what is wrong and how to fix it (Message).
type FieldError struct {
	// File is the config file as named to Load or Parse.
	File string
	// Line is the 1-based line the problem is on, or the line of the
	// nearest enclosing field when the field itself is missing; 0 when
	// unknown.
	Line int
	// Field is the path of the field in JSON notation, such as
	// "apps[1].split[0].manager"; empty when the whole file is concerned.
	Field string
	// Message says what is wrong and what to do; it never contains the
	// content of a secret.
	Message string
}

// Error formats the problem as "file:line: field: message".
func (e FieldError) Error() string {
	var b strings.Builder
	b.WriteString(e.File)
	if e.Line > 0 {
		fmt.Fprintf(&b, ":%d", e.Line)
	}
	b.WriteString(": ")
	if e.Field != "" {
		b.WriteString(e.Field)
		b.WriteString(": ")
	}
	b.WriteString(e.Message)
	return b.String()
}

// Errors is every problem found in one config file, sorted by line, then
// field, then message. Load and Parse return it (as an error) when a file
// is invalid; its Error lists them one per line, and errors.As gets at
// the individual FieldErrors.
type Errors = errlist.List[FieldError]

// sortErrors orders problems deterministically and drops exact duplicates
// (an anchored node reached through several aliases is reported once).
func sortErrors(errs Errors) Errors {
	slices.SortStableFunc(errs, func(a, b FieldError) int {
		return cmp.Or(
			cmp.Compare(a.Line, b.Line),
			cmp.Compare(a.Field, b.Field),
			cmp.Compare(a.Message, b.Message),
		)
	})
	return slices.Compact(errs)
}
