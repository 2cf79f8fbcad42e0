package ui

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/ownership"
	"syncd.dev/syncd/internal/redact"
)

// entry is a managedFields entry of the offline tests.
func entry(manager string, op metav1.ManagedFieldsOperationType, subresource, fields string) metav1.ManagedFieldsEntry {
	t := metav1.NewTime(time.Date(2026, 12, 5, 3, 0, 0, 0, time.UTC))
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, APIVersion: "v1", Time: &t,
		FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: []byte(fields)}}
}

// lineSummary is a line's path, text and owners, for comparison.
type lineSummary struct {
	Path, Text string
	Owners     []string
	Declared   bool
}

func summarize(m *OwnerMap) []lineSummary {
	var out []lineSummary
	for _, l := range m.Lines {
		s := lineSummary{Path: l.Path, Text: l.Indent() + l.Key + l.Value, Declared: l.Declared}
		if l.Item {
			s.Text = l.Indent() + "-" + l.Value
		}
		for _, o := range l.Owners {
			s.Owners = append(s.Owners, o.Name)
		}
		out = append(out, s)
	}
	return out
}

// TestBuildMap: every line of the map carries the managers whose field
// sets own it (list items matched by key, an atomic list by its owner),
// a map line only its own owners, and a Secret's values are redacted.
func TestBuildMap(t *testing.T) {
	tests := map[string]struct {
		obj     map[string]any
		entries []metav1.ManagedFieldsEntry
		app     []string
		want    []lineSummary
	}{
		"keyed list items and a shared field": {
			obj: map[string]any{"apiVersion": "v1", "kind": "Pod", "metadata": map[string]any{"name": "p", "labels": map[string]any{"team": "a"}},
				"spec": map[string]any{"containers": []any{map[string]any{"name": "app", "image": "nginx"}}}},
			entries: []metav1.ManagedFieldsEntry{
				entry("syncd-web", metav1.ManagedFieldsOperationApply, "", `{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{".":{},"f:name":{}}}}}`),
				entry("kubectl-edit", metav1.ManagedFieldsOperationUpdate, "", `{"f:metadata":{"f:labels":{"f:team":{}}},"f:spec":{"f:containers":{"k:{\"name\":\"app\"}":{"f:image":{}}}}}`),
			},
			app: []string{"syncd-web"},
			want: []lineSummary{
				{Path: ".apiVersion", Text: "apiVersionv1"},
				{Path: ".kind", Text: "kindPod"},
				{Path: ".metadata", Text: "metadata"},
				{Path: ".metadata.labels", Text: "  labels"},
				{Path: ".metadata.labels.team", Text: "    teama", Owners: []string{"kubectl-edit", "syncd-web"}, Declared: true},
				{Path: ".metadata.name", Text: "  namep"},
				{Path: ".spec", Text: "spec"},
				{Path: ".spec.containers", Text: "  containers"},
				{Path: `.spec.containers[name="app"]`, Text: "    -", Owners: []string{"syncd-web"}, Declared: true},
				{Path: `.spec.containers[name="app"].image`, Text: "      imagenginx", Owners: []string{"kubectl-edit"}},
				{Path: `.spec.containers[name="app"].name`, Text: "      nameapp", Owners: []string{"syncd-web"}, Declared: true},
			},
		},
		"a Secret's data is redacted, its keys kept": {
			obj: map[string]any{"apiVersion": "v1", "kind": "Secret", "metadata": map[string]any{"name": "s"}, "data": map[string]any{"password": "aHVudGVyMg=="}},
			entries: []metav1.ManagedFieldsEntry{
				entry("syncd-web", metav1.ManagedFieldsOperationApply, "", `{"f:data":{"f:password":{}}}`),
			},
			want: []lineSummary{
				{Path: ".apiVersion", Text: "apiVersionv1"},
				{Path: ".kind", Text: "kindSecret"},
				{Path: ".metadata", Text: "metadata"},
				{Path: ".metadata.name", Text: "  names"},
				{Path: ".data", Text: "data"},
				{Path: ".data.password", Text: "  password" + redact.Marker, Owners: []string{"syncd-web"}},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			m := buildMap(mapInput{Object: tc.obj, Own: ownership.DecodeEntries(tc.entries), AppManagers: tc.app})
			if diff := cmp.Diff(tc.want, summarize(m)); diff != "" {
				t.Errorf("lines (-want +got):\n%s", diff)
			}
		})
	}
}
