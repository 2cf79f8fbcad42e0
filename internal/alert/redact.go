package alert

import (
	"slices"
	"strings"
)

// Redacted replaces every value this package will not send.
const Redacted = "<redacted>"

// minScrubLen is the shortest redacted value that is also removed from the
// Summary: shorter values ("1", "ok") would mangle the text without hiding
// anything worth hiding.
const minScrubLen = 4

// Redact returns a copy of ev in which the Desired and Live values of
// sensitive fields are replaced by Redacted. A field is sensitive when it is
// marked Sensitive, or when the object's kind is Secret and the field lies
// under .data or .stringData, or is the last-applied-configuration
// annotation (which holds the whole Secret). Redacted values of at least
// four characters are also removed from the Summary. Empty values stay
// empty: they say the field is unset, not what it holds.
//
// Producers should redact before calling Notify; the Notifier applies Redact
// again to every event regardless.
func Redact(ev Event) Event {
	ev.Fields = slices.Clone(ev.Fields)
	secret := ev.Object.Kind == "Secret"
	var hidden []string
	for i := range ev.Fields {
		f := &ev.Fields[i]
		if !f.Sensitive && !(secret && secretPath(f.Path)) {
			continue
		}
		f.Sensitive = true
		for _, v := range []*string{&f.Desired, &f.Live} {
			if *v == "" || *v == Redacted {
				continue
			}
			hidden = append(hidden, *v)
			*v = Redacted
		}
	}
	// Longest first, so a value that contains another is removed whole.
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) })
	for _, v := range hidden {
		if len(v) >= minScrubLen {
			ev.Summary = strings.ReplaceAll(ev.Summary, v, Redacted)
		}
	}
	return ev
}

// secretPath reports whether path, in a Secret, may hold secret data.
func secretPath(path string) bool {
	p := strings.TrimPrefix(path, ".")
	for _, top := range []string{"data", "stringData"} {
		if p == top || strings.HasPrefix(p, top+".") || strings.HasPrefix(p, top+"[") {
			return true
		}
	}
	return strings.HasPrefix(p, "metadata") && strings.Contains(p, "last-applied-configuration")
}
