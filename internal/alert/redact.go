package alert

import (
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/redact"
)

// minScrubLen is the shortest hidden value that is also removed from the
// Summary: shorter values ("1", "ok") would mangle the text without hiding
// anything worth hiding.
const minScrubLen = 4

// Redact returns a copy of ev in which the Desired and Live values of
// hidden fields are replaced by redact.Marker, and the Summary is
// scrubbed as error text is (redact.Text). A field is hidden when it is
// marked Sensitive, when package redact's built-in rules hide its
// FieldPath (Secret data and stringData, the last-applied annotation), or
// when it belongs to a Secret, has values and no FieldPath to tell; the
// values of other fields have every secret value the process knows
// masked (redact.Known). Hidden values
// of at least four characters are also removed from the Summary. Empty
// values stay empty: they say the field is unset, not what it holds.
//
// Producers should redact before calling Notify; the Notifier applies Redact
// again to every event regardless.
func Redact(ev Event) Event {
	ev.Fields = slices.Clone(ev.Fields)
	gk := groupKind(ev.Object)
	var hidden []string
	for i := range ev.Fields {
		f := &ev.Fields[i]
		if !hides(gk, *f) {
			f.Desired, f.Live = redact.Known(f.Desired), redact.Known(f.Live)
			continue
		}
		f.Sensitive = true
		for _, v := range []*string{&f.Desired, &f.Live} {
			if *v == "" || redact.IsMarker(*v) {
				continue
			}
			hidden = append(hidden, *v)
			*v = redact.Marker
		}
	}
	// Longest first, so a value that contains another is removed whole.
	slices.SortFunc(hidden, func(a, b string) int { return len(b) - len(a) })
	for _, v := range hidden {
		if len(v) >= minScrubLen {
			ev.Summary = strings.ReplaceAll(ev.Summary, v, redact.Marker)
		}
	}
	ev.Summary = redact.Text(ev.Summary)
	return ev
}

// hides reports whether f's values are hidden.
func hides(gk schema.GroupKind, f Field) bool {
	if f.Sensitive {
		return true
	}
	if f.FieldPath == nil {
		return redact.IsSecret(gk) && (f.Desired != "" || f.Live != "")
	}
	return (*redact.Rules)(nil).Path(gk, f.FieldPath)
}

// groupKind returns the group and kind of o.
func groupKind(o ObjectRef) schema.GroupKind {
	gv, _ := schema.ParseGroupVersion(o.APIVersion)
	return schema.GroupKind{Group: gv.Group, Kind: o.Kind}
}
