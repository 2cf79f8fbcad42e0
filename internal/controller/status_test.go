package controller

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
)

// TestStatusCountsPendingHandoffs: every slice whose fields the handoff
// manager holds is counted, the first MaxStatusHandoffs are listed with
// their fields, and a slice holding nothing is neither.
func TestStatusCountsPendingHandoffs(t *testing.T) {
	cs := &applier.ChangeSet{Revision: "abc"}
	cs.Changes = append(cs.Changes, applier.Change{Object: deployment("plain"), Manager: "syncd-web", Action: applier.Unchanged})
	const holding = v1alpha1.MaxStatusHandoffs + 5
	for i := range holding {
		cs.Changes = append(cs.Changes, applier.Change{Object: deployment(fmt.Sprintf("web-%02d", i)), Manager: "syncd-web", Action: applier.Unchanged, Resolved: &applier.Resolution{Held: []string{".spec.replicas"}}})
	}
	st := statusOf(v1alpha1.AppStatus{}, 1, attempt{Revision: "abc", ChangeSet: cs, Reason: v1alpha1.ReasonSucceeded}, metav1.Now())
	if st.Objects == nil || st.Objects.HandoffsPending != holding {
		t.Fatalf("objects = %+v, want handoffsPending %d", st.Objects, holding)
	}
	if len(st.Handoffs) != v1alpha1.MaxStatusHandoffs {
		t.Fatalf("status lists %d handoffs, want the first %d", len(st.Handoffs), v1alpha1.MaxStatusHandoffs)
	}
	want := v1alpha1.PendingHandoff{Object: "apps/Deployment web/web-00", Manager: "syncd-web", Fields: []string{".spec.replicas"}}
	if diff := cmp.Diff(want, st.Handoffs[0]); diff != "" {
		t.Errorf("first handoff (-want +got):\n%s", diff)
	}

	copied := st.DeepCopy()
	copied.Handoffs[0].Fields[0] = ".spec.template"
	if st.Handoffs[0].Fields[0] != ".spec.replicas" {
		t.Errorf("DeepCopy shares the handoffs' fields with the original")
	}

	none := statusOf(st, 2, attempt{Revision: "def", ChangeSet: &applier.ChangeSet{Revision: "def"}, Reason: v1alpha1.ReasonSucceeded}, metav1.Now())
	if none.Objects.HandoffsPending != 0 || none.Handoffs != nil {
		t.Errorf("after an apply holding nothing: handoffsPending %d, handoffs %v; want none", none.Objects.HandoffsPending, none.Handoffs)
	}
}

func deployment(name string) planner.ObjectRef {
	return planner.ObjectRef{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: "web", Name: name}
}

// TestStatusWarnings: status.warnings are the last render's warnings,
// at most MaxStatusWarnings of them; an attempt that did not render (its
// source failed) keeps them, and a render without warnings clears them.
func TestStatusWarnings(t *testing.T) {
	var many []planner.Warning
	for i := range v1alpha1.MaxStatusWarnings + 5 {
		many = append(many, planner.Warning{Object: fmt.Sprintf("k%d/kustomization.yaml", i), Message: "'bases' is deprecated"})
	}
	st := statusOf(v1alpha1.AppStatus{}, 1, attempt{Revision: "abc", Reason: v1alpha1.ReasonSucceeded, Rendered: true, Warnings: many}, metav1.Now())
	if len(st.Warnings) != v1alpha1.MaxStatusWarnings || st.Warnings[0] != "k0/kustomization.yaml: 'bases' is deprecated" {
		t.Errorf("warnings after a render with %d: %d, first %q", len(many), len(st.Warnings), st.Warnings)
	}
	kept := statusOf(st, 1, attempt{Reason: v1alpha1.ReasonSourceFailed, Err: errors.New("source down")}, metav1.Now())
	if diff := cmp.Diff(st.Warnings, kept.Warnings); diff != "" {
		t.Errorf("an attempt that did not render changed the warnings (-before +after):\n%s", diff)
	}
	cleared := statusOf(kept, 1, attempt{Revision: "def", Reason: v1alpha1.ReasonSucceeded, Rendered: true}, metav1.Now())
	if cleared.Warnings != nil {
		t.Errorf("a render without warnings left %q", cleared.Warnings)
	}
}

// TestStatusSourceFailed: an App whose source cannot be polled is
// Ready=False with reason SourceFailed and the error, and never Stalled
// (the poll is retried and heals by itself): at the revision it applied
// before, which stays lastAppliedRevision, or, before any, still
// Reconciling.
func TestStatusSourceFailed(t *testing.T) {
	down := attempt{Reason: v1alpha1.ReasonSourceFailed, Err: errors.New("source down"), Stage: reconcile.StageSource, Result: reconcile.ResultFailed}
	applied := statusOf(v1alpha1.AppStatus{}, 1, attempt{Revision: "abc", Reason: v1alpha1.ReasonSucceeded}, metav1.Now())
	tests := map[string]struct {
		old         v1alpha1.AppStatus
		wantConds   map[string]string
		wantApplied string
	}{
		"a revision in force": {
			old:         applied,
			wantConds:   map[string]string{"Ready": "False SourceFailed: source down", "Reconciling": "False SourceFailed: ", "Stalled": "False SourceFailed: "},
			wantApplied: "abc",
		},
		"before the first revision": {
			old:       reconciling(v1alpha1.AppStatus{}, 1),
			wantConds: map[string]string{"Ready": "False SourceFailed: source down", "Reconciling": "True SourceFailed: source down", "Stalled": "False SourceFailed: "},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			st := statusOf(tt.old, 1, down, metav1.Now())
			got := map[string]string{}
			for _, c := range st.Conditions {
				got[c.Type] = fmt.Sprintf("%s %s: %s", c.Status, c.Reason, c.Message)
			}
			if diff := cmp.Diff(tt.wantConds, got); diff != "" {
				t.Errorf("conditions (-want +got):\n%s", diff)
			}
			if st.LastAppliedRevision != tt.wantApplied {
				t.Errorf("lastAppliedRevision = %q, want %q", st.LastAppliedRevision, tt.wantApplied)
			}
		})
	}
}
