package errlist

import "strings"

// List is every problem of one kind found in one input, in the order its
// owner gives them.
type List[E error] []E

// Error lists the problems one per line.
func (l List[E]) Error() string {
	lines := make([]string, len(l))
	for i, e := range l {
		lines[i] = e.Error()
	}
	return strings.Join(lines, "\n")
}

// Unwrap returns the individual problems, so errors.Is and errors.As see
// each one and its causes.
func (l List[E]) Unwrap() []error {
	errs := make([]error, len(l))
	for i, e := range l {
		errs[i] = e
	}
	return errs
}
