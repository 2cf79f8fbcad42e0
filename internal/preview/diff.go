package preview

import (
	"fmt"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/redact"
)

// DiffOptions tune DiffWith.
type DiffOptions struct {
	// Sensitive are the app's redaction rules (redact.ForApp); nil
	// applies the built-in ones. The diff shows a hidden value as
	// redact.Marker, or redact.ChangedMarker on the dry-run side when the
	// value changes.
	Sensitive *redact.Rules
	// Declared are the fields Git declares for the object (the union of
	// its slices). With the objects' managedFields they name the list
	// items a key pattern (containers[name="app"]) selects.
	Declared *fieldpath.Set
}

// mainResourceSets returns the field sets of u's managedFields entries on
// the main resource, for redact's Pair. Entries that do not decode are
// skipped: they name no paths to hide (values are still hidden by the
// kind's rules).
func mainResourceSets(u *unstructured.Unstructured) []*fieldpath.Set {
	var out []*fieldpath.Set
	for _, e := range ownership.Decode(u).MainResource() {
		out = append(out, e.Set)
	}
	return out
}

// Diff returns a unified diff of live against after as YAML, both cleaned
// of server bookkeeping and with the values package redact's built-in
// rules hide (Secret data, the last-applied annotation) redacted. A nil live is an
// object to create; a nil after (a refused dry run) or two equal objects
// give an empty diff.
func Diff(live, after *unstructured.Unstructured) (string, error) {
	return DiffWith(live, after, DiffOptions{})
}

// DiffWith is Diff with the fields opts marks sensitive redacted as well.
func DiffWith(live, after *unstructured.Unstructured, opts DiffOptions) (string, error) {
	if after == nil {
		return "", nil
	}
	var a, b map[string]any
	if live != nil {
		a = clean(live)
	}
	b = clean(after)
	if equality.Semantic.DeepEqual(a, b) {
		return "", nil
	}
	sets := append(mainResourceSets(live), mainResourceSets(after)...)
	a, b = opts.Sensitive.Pair(a, b, append(sets, opts.Declared)...)
	ay, err := toYAML(a)
	if err != nil {
		return "", err
	}
	by, err := toYAML(b)
	if err != nil {
		return "", err
	}
	from := "live"
	if live == nil {
		from = "/dev/null"
	}
	return difflib.GetUnifiedDiffString(difflib.UnifiedDiff{
		A: lines(ay), B: lines(by),
		FromFile: from, ToFile: "dry-run", Context: 3,
	})
}

// toYAML encodes an object's JSON value (as decoded from JSON: no typed
// nil slices or maps) as YAML, exactly as sigs.k8s.io/yaml.Marshal does
// (keys in go-yaml's order, the same number and string forms), without
// its detour through JSON text, which was most of a large preview's CPU.
func toYAML(m map[string]any) (string, error) {
	if m == nil {
		return "", nil
	}
	b, err := yaml.Marshal(m)
	if err != nil {
		return "", fmt.Errorf("encode as YAML: %w", err)
	}
	return string(b), nil
}

// serverFields are the metadata fields the server maintains, left out of
// a diff.
var serverFields = map[string]bool{"managedFields": true, "resourceVersion": true, "generation": true, "uid": true, "creationTimestamp": true}

// clean returns u's content without what the server maintains. Only the
// top-level and metadata maps are new; every other value is shared with u
// and must not be changed (redact's Pair copies the containers it
// changes).
// A deep copy of the whole object, managedFields included, was a large
// share of a big preview's allocations.
func clean(u *unstructured.Unstructured) map[string]any {
	c := make(map[string]any, len(u.Object))
	for k, v := range u.Object {
		if k != "status" {
			c[k] = v
		}
	}
	if md, ok := c["metadata"].(map[string]any); ok {
		m := make(map[string]any, len(md))
		for k, v := range md {
			if !serverFields[k] {
				m[k] = v
			}
		}
		c["metadata"] = m
	}
	return c
}

// lines splits s into lines for difflib; an empty s has none.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(strings.TrimSuffix(s, "\n"))
}
