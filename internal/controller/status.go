package controller

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
)

// maxMessage bounds a condition message (the API allows 32768 bytes; a
// printer column wants far less, and the full error is in the log).
const maxMessage = 4096

// attempt is how one reconcile of an App ended, before it is written.
type attempt struct {
	// Reason is ReasonSucceeded or why the attempt failed.
	Reason v1alpha1.Reason
	// Err is the failure; nil on success.
	Err error
	// Revision is the revision label attempted ("" when the source never
	// answered).
	Revision  string
	ChangeSet *applier.ChangeSet
	Prune     *inventory.Report
	// RequestedAt is the App's requestedAt annotation when the attempt
	// started.
	RequestedAt string
	// Waiting is set when the App was not applied because it waits for
	// its dependencies: Err says for which; the App is Reconciling, not
	// Stalled (kstatus InProgress).
	Waiting bool
	// Rendered says the attempt rendered the App, and Warnings are the
	// render's warnings; an attempt that did not render keeps the
	// warnings of the last render.
	Rendered bool
	Warnings []planner.Warning
	// Result is how the reconcile ended, as the file daemon's /status
	// and metrics say it (failed for an App that never reached it), and
	// Stage where it failed.
	Result reconcile.Result
	Stage  reconcile.Stage
	// Deferred is set when the App was not reconciled: it backs off
	// from a failure and its source is still at the revision that
	// failed (backoff.go). Nothing is written for it.
	Deferred bool
}

// statusOf computes an App's new status from its old one and an attempt:
// Ready and Stalled say how the attempt ended, Reconciling is cleared
// (but for an App waiting for its dependencies or for its source's first
// revision), and the revisions and counts move on.
func statusOf(old v1alpha1.AppStatus, generation int64, at attempt, now metav1.Time) v1alpha1.AppStatus {
	st := *old.DeepCopy()
	st.ObservedGeneration = generation
	if at.RequestedAt != "" {
		st.LastHandledReconcileAt = at.RequestedAt
	}
	st.LastReconcileTime = &now
	if at.Revision != "" {
		st.LastAttemptedRevision = at.Revision
	}
	setCondition(&st.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionFalse, at.Reason, "", generation)
	switch {
	case at.Waiting:
		msg := message(at.Err)
		setCondition(&st.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionTrue, at.Reason, msg, generation)
		setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, at.Reason, msg, generation)
		setCondition(&st.Conditions, v1alpha1.ConditionStalled, metav1.ConditionFalse, at.Reason, "", generation)
	case at.Err == nil:
		st.LastAppliedRevision = at.Revision
		msg := "applied revision " + at.Revision
		setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionTrue, at.Reason, msg, generation)
		setCondition(&st.Conditions, v1alpha1.ConditionStalled, metav1.ConditionFalse, at.Reason, "", generation)
	case at.Stage == reconcile.StageSource:
		sourceFailed(&st, at, generation)
	default:
		msg := message(at.Err)
		setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, at.Reason, msg, generation)
		setCondition(&st.Conditions, v1alpha1.ConditionStalled, metav1.ConditionTrue, at.Reason, msg, generation)
	}
	if at.ChangeSet != nil {
		st.Objects = countsOf(at.ChangeSet)
		st.Handoffs = handoffsOf(at.ChangeSet)
	}
	if p := pruneSummary(at.Prune, at.Revision, now); p != nil {
		st.LastPrune = p
	}
	if at.Rendered {
		st.Warnings = warningsOf(at.Warnings)
	}
	return st
}

// sourceFailed sets the conditions of an attempt whose source could not
// be polled: Ready=False with the reason (SourceFailed) and the error,
// and never Stalled, since the poll is retried with backoff and heals
// without a person (as the file daemon's /status says: result failed,
// the last good revision in force). kstatus reads it InProgress (Ready
// False, not Stalled), not Failed. Once a revision was applied it stays
// in force at lastAppliedRevision, nothing is applied or pruned; before
// the first one the App is also Reconciling: it has not reached any
// state yet.
func sourceFailed(st *v1alpha1.AppStatus, at attempt, generation int64) {
	msg := message(at.Err)
	setCondition(&st.Conditions, v1alpha1.ConditionReady, metav1.ConditionFalse, at.Reason, msg, generation)
	setCondition(&st.Conditions, v1alpha1.ConditionStalled, metav1.ConditionFalse, at.Reason, "", generation)
	if st.LastAppliedRevision == "" {
		setCondition(&st.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionTrue, at.Reason, msg, generation)
	}
}

// warningsOf is status.warnings of a render's warnings: the first
// MaxStatusWarnings, each as "object: message", scrubbed like every
// message syncd writes to status.
func warningsOf(ws []planner.Warning) []string {
	var out []string
	for _, w := range ws {
		if len(out) == v1alpha1.MaxStatusWarnings {
			break
		}
		out = append(out, redact.Sprintf("%s", w.String()))
	}
	return out
}

// reconciling marks a new generation as being worked on (kstatus
// InProgress) before the work starts.
func reconciling(old v1alpha1.AppStatus, generation int64) v1alpha1.AppStatus {
	st := *old.DeepCopy()
	st.ObservedGeneration = generation
	setCondition(&st.Conditions, v1alpha1.ConditionReconciling, metav1.ConditionTrue, v1alpha1.ReasonProgressing, fmt.Sprintf("reconciling generation %d", generation), generation)
	return st
}

func setCondition(conds *[]metav1.Condition, t v1alpha1.ConditionType, s metav1.ConditionStatus, r v1alpha1.Reason, msg string, gen int64) {
	meta.SetStatusCondition(conds, metav1.Condition{Type: string(t), Status: s, Reason: string(r), Message: msg, ObservedGeneration: gen})
}

// message is an error as a condition message: scrubbed of anything that
// looks secret (package redact) and bounded.
func message(err error) string {
	msg := strings.TrimSpace(redact.Error(err))
	if len(msg) > maxMessage {
		msg = msg[:maxMessage] + "…"
	}
	return msg
}

func countsOf(cs *applier.ChangeSet) *v1alpha1.ObjectCounts {
	return &v1alpha1.ObjectCounts{
		Total:     len(cs.Changes),
		Changed:   cs.Written(),
		Conflicts: cs.Count(applier.Conflicted),
		Failed:    len(cs.Failures()),

		HandoffsPending: len(cs.Holding()),
	}
}

// handoffsOf lists the pending handoffs of an apply, the first
// MaxStatusHandoffs of them.
func handoffsOf(cs *applier.ChangeSet) []v1alpha1.PendingHandoff {
	var out []v1alpha1.PendingHandoff
	for _, c := range cs.Holding() {
		if len(out) == v1alpha1.MaxStatusHandoffs {
			break
		}
		out = append(out, v1alpha1.PendingHandoff{Object: c.Object.String(), Manager: string(c.Manager), Fields: append([]string(nil), c.Resolution().Held...)})
	}
	return out
}

// pruneSummary is a prune that removed or refused something; nil for
// one that did nothing.
func pruneSummary(rep *inventory.Report, revision string, now metav1.Time) *v1alpha1.PruneSummary {
	if rep == nil || rep.DryRun || (rep.Refused == nil && len(rep.Deleted)+len(rep.Orphaned)+len(rep.Spared) == 0) {
		return nil
	}
	return &v1alpha1.PruneSummary{
		Time: now, Revision: revision,
		Deleted: len(rep.Deleted), Orphaned: len(rep.Orphaned), Spared: len(rep.Spared),
		Message: redact.Sprintf("%s", rep.String()),
	}
}

// statusWriter writes the status subresource of Apps.
type statusWriter struct{ dyn dynamic.Interface }

// write replaces the App's status with a merge patch of the status
// subresource (conditions are a whole list: the patch carries all).
func (w statusWriter) write(ctx context.Context, namespace, name string, st v1alpha1.AppStatus) error {
	// The drift summary is the drift watcher's to write (writeDrift): an
	// attempt's copy of it may be older.
	st.Drift = nil
	data, err := json.Marshal(map[string]any{"status": st})
	if err != nil {
		return fmt.Errorf("App %s/%s: encode status: %w", namespace, name, err)
	}
	_, err = w.dyn.Resource(v1alpha1.AppResource).Namespace(namespace).Patch(ctx, name, types.MergePatchType, data, metav1.PatchOptions{FieldManager: FieldManager}, "status")
	if err != nil {
		return fmt.Errorf("App %s/%s: write status: %w", namespace, name, err)
	}
	return nil
}

// FieldManager is the manager of the controller's writes to App and
// GitSource objects (status, finalizers).
const FieldManager = "syncd-controller"
