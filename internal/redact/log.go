package redact

import (
	"context"
	"log/slog"
)

// LogHandler returns a slog.Handler that scrubs every record before h sees
// it: the message and string attributes through Text, error attributes
// through Error (so a logged error is its scrubbed text), in groups too.
func LogHandler(h slog.Handler) slog.Handler { return &logHandler{h: h} }

type logHandler struct{ h slog.Handler }

func (l *logHandler) Enabled(ctx context.Context, level slog.Level) bool {
	return l.h.Enabled(ctx, level)
}

func (l *logHandler) Handle(ctx context.Context, r slog.Record) error {
	out := slog.NewRecord(r.Time, r.Level, Text(r.Message), r.PC)
	r.Attrs(func(a slog.Attr) bool {
		out.AddAttrs(scrubAttr(a))
		return true
	})
	return l.h.Handle(ctx, out)
}

func (l *logHandler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scrubbedAttrs := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		scrubbedAttrs[i] = scrubAttr(a)
	}
	return &logHandler{h: l.h.WithAttrs(scrubbedAttrs)}
}

func (l *logHandler) WithGroup(name string) slog.Handler {
	return &logHandler{h: l.h.WithGroup(name)}
}

// scrubAttr returns a with its value scrubbed.
func scrubAttr(a slog.Attr) slog.Attr {
	v := a.Value.Resolve()
	switch v.Kind() {
	case slog.KindString:
		return slog.String(a.Key, Text(v.String()))
	case slog.KindGroup:
		group := v.Group()
		out := make([]any, len(group))
		for i, g := range group {
			out[i] = scrubAttr(g)
		}
		return slog.Group(a.Key, out...)
	case slog.KindAny:
		switch x := v.Any().(type) {
		case error:
			return slog.String(a.Key, Error(x))
		case string:
			return slog.String(a.Key, Text(x))
		}
	}
	return slog.Attr{Key: a.Key, Value: v}
}
