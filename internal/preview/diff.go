package preview

import (
	"fmt"
	"maps"
	"strings"

	"github.com/pmezard/go-difflib/difflib"
	yaml "go.yaml.in/yaml/v2"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// Redaction markers shown instead of Secret values.
const (
	Redacted        = "<redacted>"
	RedactedChanged = "<redacted, changed>"
)

// lastApplied is client-side apply's copy of the object, which for a
// Secret holds its values.
const lastApplied = "kubectl.kubernetes.io/last-applied-configuration"

// Diff returns a unified diff of live against after as YAML, both cleaned
// of server bookkeeping and with Secret values redacted. A nil live is an
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
	redactSecrets(a, b)
	redactSensitive(a, b, live, after, opts)
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
// and must not be changed (redactSecrets replaces the maps it redacts).
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

// redactSecrets replaces the values of core Secrets' data and stringData:
// a value is Redacted, or RedactedChanged in b when it differs from a's.
// The last-applied-configuration annotation is redacted too. The maps it
// changes are replaced by redacted copies, so a and b may share them with
// the objects they were cleaned from.
func redactSecrets(a, b map[string]any) {
	if !isSecret(a) && !isSecret(b) {
		return
	}
	before := map[string]any{}
	for _, field := range []string{"data", "stringData"} {
		if vals, ok := a[field].(map[string]any); ok {
			for k, v := range vals {
				before[field+"/"+k] = v
			}
		}
	}
	for _, field := range []string{"data", "stringData"} {
		if vals, ok := a[field].(map[string]any); ok {
			red := make(map[string]any, len(vals))
			for k := range vals {
				red[k] = Redacted
			}
			a[field] = red
		}
		if vals, ok := b[field].(map[string]any); ok {
			red := make(map[string]any, len(vals))
			for k, v := range vals {
				old, existed := before[field+"/"+k]
				if existed && !equality.Semantic.DeepEqual(old, v) {
					red[k] = RedactedChanged
				} else {
					red[k] = Redacted
				}
			}
			b[field] = red
		}
	}
	for _, m := range []map[string]any{a, b} {
		if m == nil {
			continue
		}
		if _, found, _ := unstructured.NestedString(m, "metadata", "annotations", lastApplied); found {
			md := m["metadata"].(map[string]any) // clean made it a new map
			ann := maps.Clone(md["annotations"].(map[string]any))
			ann[lastApplied] = Redacted
			md["annotations"] = ann
		}
	}
}

func isSecret(m map[string]any) bool {
	return m != nil && m["apiVersion"] == "v1" && m["kind"] == "Secret"
}

// lines splits s into lines for difflib; an empty s has none.
func lines(s string) []string {
	if s == "" {
		return nil
	}
	return difflib.SplitLines(strings.TrimSuffix(s, "\n"))
}
