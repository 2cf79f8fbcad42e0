package controller

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestNotReadyReason: an App is ready for its dependents when it applied
// its last attempted revision and is Ready, and also when only its source
// fails after that (the revision it applied stays in force); not when its
// source fails before any revision was applied, or after a revision it
// did not apply, nor when its apply failed.
func TestNotReadyReason(t *testing.T) {
	app := func(status metav1.ConditionStatus, reason v1alpha1.Reason, applied, attempted string) *v1alpha1.App {
		a := &v1alpha1.App{}
		a.Generation = 2
		a.Status.ObservedGeneration = 2
		a.Status.LastAppliedRevision, a.Status.LastAttemptedRevision = applied, attempted
		a.Status.Conditions = []metav1.Condition{{Type: string(v1alpha1.ConditionReady), Status: status, Reason: string(reason), ObservedGeneration: 2}}
		return a
	}
	tests := map[string]struct {
		app  *v1alpha1.App
		want string
	}{
		"ready": {app: app(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, "abc", "abc")},
		"source fails, the revision it applied stands": {app: app(metav1.ConditionFalse, v1alpha1.ReasonSourceFailed, "abc", "abc")},
		"source fails before a first revision": {app: app(metav1.ConditionFalse, v1alpha1.ReasonSourceFailed, "", ""),
			want: "is not Ready (SourceFailed)"},
		"source fails after a revision it did not apply": {app: app(metav1.ConditionFalse, v1alpha1.ReasonSourceFailed, "abc", "def"),
			want: "is not Ready (SourceFailed)"},
		"apply failed": {app: app(metav1.ConditionFalse, v1alpha1.ReasonApplyFailed, "abc", "abc"),
			want: "is not Ready (ApplyFailed)"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := notReadyReason(tc.app); got != tc.want {
				t.Errorf("notReadyReason = %q, want %q", got, tc.want)
			}
		})
	}
}
