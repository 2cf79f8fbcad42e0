package redact

import (
	"errors"
	"fmt"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// Error returns err's text with the values it echoes hidden: the text of
// every API-server status error it wraps is rebuilt from the status's
// causes (field and reason, each scrubbed by Text), and the whole text is
// then scrubbed by Text. It returns "" for a nil err.
func Error(err error) string {
	if err == nil {
		return ""
	}
	msg := err.Error()
	for _, se := range statusErrors(err) {
		raw := se.Status().Message
		if raw == "" {
			continue
		}
		msg = strings.ReplaceAll(msg, raw, statusMessage(se.Status()))
	}
	return Text(msg)
}

// Wrap returns err with its text scrubbed as Error does; errors.Is and
// errors.As still see err. It returns nil for a nil err.
func Wrap(err error) error {
	if err == nil {
		return nil
	}
	var s *scrubbed
	if errors.As(err, &s) && s == err {
		return err
	}
	return &scrubbed{err: err}
}

// scrubbed is an error whose text is scrubbed.
type scrubbed struct{ err error }

func (s *scrubbed) Error() string { return Error(s.err) }
func (s *scrubbed) Unwrap() error { return s.err }

// statusErrors returns the API status errors in err's tree.
func statusErrors(err error) []apierrors.APIStatus {
	var out []apierrors.APIStatus
	var visit func(error)
	visit = func(e error) {
		if e == nil {
			return
		}
		if st, ok := e.(apierrors.APIStatus); ok {
			out = append(out, st)
		}
		switch u := e.(type) {
		case interface{ Unwrap() error }:
			visit(u.Unwrap())
		case interface{ Unwrap() []error }:
			for _, c := range u.Unwrap() {
				visit(c)
			}
		}
	}
	visit(err)
	return out
}

// statusMessage rebuilds a status's message from its causes: the object,
// then each cause's field and scrubbed reason. A status without causes
// keeps its message (scrubbed later by Text).
func statusMessage(st metav1.Status) string {
	d := st.Details
	if d == nil || len(d.Causes) == 0 {
		return st.Message
	}
	var causes []string
	for _, c := range d.Causes {
		msg := firstLine(c.Message)
		if c.Field != "" {
			msg = c.Field + ": " + msg
		}
		causes = append(causes, msg)
	}
	head, _, ok := strings.Cut(st.Message, ": ")
	if !ok || strings.ContainsAny(head, "\n{[") {
		head = fmt.Sprintf("%s %q %s", qualifiedKind(d), d.Name, strings.ToLower(string(st.Reason)))
	}
	return head + ": " + strings.Join(causes, "; ")
}

func qualifiedKind(d *metav1.StatusDetails) string {
	if d.Group == "" {
		return d.Kind
	}
	return d.Kind + "." + d.Group
}

// firstLine returns s up to its first newline: the reason, without a dump
// of the object that some validators append (a Pod spec diff).
func firstLine(s string) string {
	line, _, _ := strings.Cut(s, "\n")
	return line
}

// Sprintf formats like fmt.Sprintf, with every error argument scrubbed as
// Error does, and scrubs the result as Text does: for messages built
// around an error (Events, alert summaries).
func Sprintf(format string, args ...any) string {
	wrapped := make([]any, len(args))
	for i, a := range args {
		if err, ok := a.(error); ok {
			a = Wrap(err)
		}
		wrapped[i] = a
	}
	return Text(fmt.Sprintf(format, wrapped...))
}
