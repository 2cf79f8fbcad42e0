package controller

import (
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/tools/record"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/redact"
)

// eventer records Kubernetes Events on Apps and their sources (kubectl
// describe shows them). A nil recorder records nothing.
type eventer struct{ rec record.EventRecorder }

func appRef(app *v1alpha1.App) *corev1.ObjectReference {
	return &corev1.ObjectReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: v1alpha1.KindApp,
		Namespace: app.Namespace, Name: app.Name, UID: app.UID, ResourceVersion: app.ResourceVersion,
	}
}

// attempt records how an attempt ended: a Warning with the failure's
// reason, or Normal Synced when the API server wrote something, and
// Normal Pruned when objects left. The recorder folds repeats of one
// message into one Event with a count.
func (e eventer) attempt(app *v1alpha1.App, at attempt) {
	if e.rec == nil {
		return
	}
	ref := appRef(app)
	if at.Waiting {
		e.rec.Eventf(ref, corev1.EventTypeNormal, string(at.Reason), "%s", message(at.Err))
		return
	}
	if at.Err != nil {
		// Scrubbed whole: an error may echo object content.
		e.rec.Eventf(ref, corev1.EventTypeWarning, string(at.Reason), "%s", message(reconcile.AtRevision(shortRevision(at.Revision), at.Err)))
		return
	}
	if cs := at.ChangeSet; cs != nil && cs.Written() > 0 {
		e.rec.Eventf(ref, corev1.EventTypeNormal, "Synced", "%s", reconcile.SyncedMessage(shortRevision(at.Revision), cs))
	}
	if eventType, reason, msg, ok := alert.PruneEventText(shortRevision(at.Revision), at.Prune); ok {
		e.rec.Eventf(ref, eventType, reason, "%s", redact.Sprintf("%s", msg))
	}
}

// shortRevision cuts a commit SHA (or tag@SHA) to 12 hex digits.
func shortRevision(rev string) string {
	if len(rev) == 40 || len(rev) == 64 {
		return rev[:12]
	}
	return rev
}

// sourceRef is the object reference of a source for its Events.
func sourceRef(src Source) *corev1.ObjectReference {
	m := src.Meta()
	return &corev1.ObjectReference{
		APIVersion: v1alpha1.GroupVersion.String(), Kind: src.Kind(),
		Namespace: m.Namespace, Name: m.Name, UID: m.UID, ResourceVersion: m.ResourceVersion,
	}
}

// sourceChecked records a source's new readiness when a check changed
// it: Normal when it became Ready, a Warning with the reason when not.
func (e eventer) sourceChecked(src Source, conds []metav1.Condition) {
	now := meta.FindStatusCondition(conds, string(v1alpha1.ConditionReady))
	old := meta.FindStatusCondition(src.conditions(), string(v1alpha1.ConditionReady))
	if e.rec == nil || now == nil || (old != nil && old.Status == now.Status && old.Message == now.Message) {
		return
	}
	typ := corev1.EventTypeNormal
	if now.Status != metav1.ConditionTrue {
		typ = corev1.EventTypeWarning
	}
	e.rec.Eventf(sourceRef(src), typ, now.Reason, "%s", now.Message)
}

// sourceFetched records that an App fetched a new revision of a source.
func (e eventer) sourceFetched(src Source, f fetched) {
	switch {
	case e.rec == nil:
	case f.Digest == "":
		e.rec.Eventf(sourceRef(src), corev1.EventTypeNormal, "NewArtifact", "fetched revision %s", f.Revision)
	default:
		e.rec.Eventf(sourceRef(src), corev1.EventTypeNormal, "NewArtifact", "fetched revision %s (digest %s)", f.Revision, f.Digest)
	}
}
