package applier

import (
	"bytes"
	"sort"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/planner"
)

// entry is a managedFields entry owning the given fields (each a path of
// field names).
func entry(t *testing.T, manager string, op metav1.ManagedFieldsOperationType, subresource string, fields ...[]any) metav1.ManagedFieldsEntry {
	t.Helper()
	set := fieldpath.NewSet()
	for _, f := range fields {
		set.Insert(fieldpath.MakePathOrDie(f...))
	}
	raw, err := set.ToJSON()
	if err != nil {
		t.Fatal(err)
	}
	return metav1.ManagedFieldsEntry{Manager: manager, Operation: op, Subresource: subresource, APIVersion: "v1", FieldsType: "FieldsV1", FieldsV1: &metav1.FieldsV1{Raw: raw}}
}

// entryOwners summarises managedFields as "manager" → leaf paths.
func entryOwners(t *testing.T, entries []metav1.ManagedFieldsEntry) map[string][]string {
	t.Helper()
	out := map[string][]string{}
	for _, e := range entries {
		key := e.Manager
		if e.Subresource != "" {
			key += "/" + e.Subresource
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			t.Fatal(err)
		}
		out[key] = append(out[key], leaves(set)...)
		sort.Strings(out[key])
	}
	return out
}

var (
	color       = []any{"data", "color"}
	size        = []any{"data", "size"}
	other       = []any{"data", "other"}
	lastApplied = []any{"metadata", "annotations", lastAppliedAnnotation}
	annotations = []any{"metadata", "annotations"}
	readyStatus = []any{"status", "ready"}
)

// TestPlanTakeover: the fields the app's manager shares with a legacy
// manager leave the legacy entry; fields the app does not share (another
// value it yielded, a field it does not declare) stay; an entry left
// with only structure and client-side apply's record goes, and the
// record with it.
func TestPlanTakeover(t *testing.T) {
	const csa, ours = "kubectl-client-side-apply", planner.FieldManager("syncd-web")
	apply, update := metav1.ManagedFieldsOperationApply, metav1.ManagedFieldsOperationUpdate
	kustomize := &Migration{from: []string{"kustomize-controller"}}
	tests := map[string]struct {
		entries         func(t *testing.T) []metav1.ManagedFieldsEntry
		migrate         *Migration
		defaulted       *fieldpath.Set
		want            map[string][]string
		wantMoves       []Move
		wantFrom        []string
		wantDropApplied bool
	}{
		"client-side apply, every field shared": {
			entries: func(t *testing.T) []metav1.ManagedFieldsEntry {
				return []metav1.ManagedFieldsEntry{
					entry(t, csa, update, "", color, size, annotations, lastApplied),
					entry(t, string(ours), apply, "", color, size),
				}
			},
			want:            map[string][]string{"syncd-web": {".data.color", ".data.size"}},
			wantMoves:       []Move{{".data.color", csa, "syncd-web"}, {".data.size", csa, "syncd-web"}},
			wantFrom:        []string{csa},
			wantDropApplied: true,
		},
		"client-side apply keeps a field with another value (yielded)": {
			entries: func(t *testing.T) []metav1.ManagedFieldsEntry {
				return []metav1.ManagedFieldsEntry{
					entry(t, csa, update, "", color, size, lastApplied),
					entry(t, string(ours), apply, "", size),
				}
			},
			want:      map[string][]string{csa: {".data.color", ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"}, "syncd-web": {".data.size"}},
			wantMoves: []Move{{".data.size", csa, "syncd-web"}},
			wantFrom:  []string{csa},
		},
		"client-side apply keeps a field Git does not declare": {
			entries: func(t *testing.T) []metav1.ManagedFieldsEntry {
				return []metav1.ManagedFieldsEntry{
					entry(t, csa, update, "", other, size, lastApplied),
					entry(t, string(ours), apply, "", size),
				}
			},
			want:      map[string][]string{csa: {".data.other", ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"}, "syncd-web": {".data.size"}},
			wantMoves: []Move{{".data.size", csa, "syncd-web"}},
			wantFrom:  []string{csa},
		},
		"another SSA manager without migrate stays shared": {
			entries: func(t *testing.T) []metav1.ManagedFieldsEntry {
				return []metav1.ManagedFieldsEntry{
					entry(t, "kustomize-controller", apply, "", color, size),
					entry(t, string(ours), apply, "", color, size),
				}
			},
			want: map[string][]string{"kustomize-controller": {".data.color", ".data.size"}, "syncd-web": {".data.color", ".data.size"}},
		},
		"another SSA manager the app migrates from": {
			entries: func(t *testing.T) []metav1.ManagedFieldsEntry {
				return []metav1.ManagedFieldsEntry{
					entry(t, "kustomize-controller", apply, "", color, size),
					entry(t, "kustomize-controller", apply, "status", readyStatus),
					entry(t, string(ours), apply, "", color, size),
				}
			},
			migrate:   kustomize,
			want:      map[string][]string{"kustomize-controller/status": {".status.ready"}, "syncd-web": {".data.color", ".data.size"}},
			wantMoves: []Move{{".data.color", "kustomize-controller", "syncd-web"}, {".data.size", "kustomize-controller", "syncd-web"}},
			wantFrom:  []string{"kustomize-controller"},
		},
		"nothing shared": {
			entries: func(t *testing.T) []metav1.ManagedFieldsEntry {
				return []metav1.ManagedFieldsEntry{
					entry(t, csa, update, "", color, lastApplied),
					entry(t, string(ours), apply, "", size),
				}
			},
			want: map[string][]string{csa: {".data.color", ".metadata.annotations.kubectl.kubernetes.io/last-applied-configuration"}, "syncd-web": {".data.size"}},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			u := &unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}
			u.SetName("cm")
			u.SetAnnotations(map[string]string{lastAppliedAnnotation: "{}"})
			u.SetManagedFields(tc.entries(t))
			got, err := planTakeover(u, []planner.FieldManager{ours}, tc.migrate, tc.defaulted)
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, entryOwners(t, got.entries)); diff != "" {
				t.Errorf("managedFields after (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantMoves, got.moves[ours]); diff != "" {
				t.Errorf("moves (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFrom, got.from); diff != "" {
				t.Errorf("from (-want +got):\n%s", diff)
			}
			if got.dropLastApplied != tc.wantDropApplied {
				t.Errorf("dropLastApplied = %v, want %v", got.dropLastApplied, tc.wantDropApplied)
			}
		})
	}
}

// TestMigrationManagers: client-side apply's managers are always taken
// over and never forced; the managers of migrate.from are taken over,
// and forced only in mode force.
func TestMigrationManagers(t *testing.T) {
	sameValue := mustMigration(t, &MigrationSpec{From: []string{"kustomize-*"}})
	force := mustMigration(t, &MigrationSpec{From: []string{"kustomize-controller", "kubectl-client-side-apply"}, Force: true})
	type verdict struct{ TakesOver, Forces bool }
	tests := map[string]struct {
		m       *Migration
		manager string
		want    verdict
	}{
		"none, client-side apply":      {nil, "kubectl-client-side-apply", verdict{true, false}},
		"none, before-first-apply":     {nil, "before-first-apply", verdict{true, false}},
		"none, kustomize-controller":   {nil, "kustomize-controller", verdict{false, false}},
		"same-value, glob":             {sameValue, "kustomize-controller", verdict{true, false}},
		"same-value, client-side":      {sameValue, "kubectl-client-side-apply", verdict{true, false}},
		"same-value, another manager":  {sameValue, "helm", verdict{false, false}},
		"force, named":                 {force, "kustomize-controller", verdict{true, true}},
		"force, client-side named":     {force, "kubectl-client-side-apply", verdict{true, true}},
		"force, before-first-apply":    {force, "before-first-apply", verdict{true, false}},
		"force, a manager not in from": {force, "kubectl-edit", verdict{false, false}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := verdict{tc.m.takesOver(tc.manager), tc.m.forces(tc.manager)}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("(-want +got):\n%s", diff)
			}
		})
	}
	if _, err := NewMigration(&MigrationSpec{From: []string{"kustomize-["}}); err == nil || !strings.Contains(err.Error(), "from[0]") {
		t.Errorf("NewMigration of a malformed glob: %v, want an error naming from[0]", err)
	}
}

func mustMigration(t *testing.T, m *MigrationSpec) *Migration {
	t.Helper()
	out, err := NewMigration(m)
	if err != nil {
		t.Fatal(err)
	}
	return out
}
