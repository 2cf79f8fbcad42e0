package reconcile

import (
	"errors"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// ReasonOf is the one reason both drivers report a reconcile with: the
// reason of the file daemon's Warning Event and of the App's Event and
// Ready condition. The vocabulary is the App's (v1alpha1's reasons), so
// that an alert on Events sees one reason for one failure, whichever
// driver ran the app:
//
//	source poll failed                            SourceFailed
//	remote cluster did not answer                 ClusterUnreachable
//	App's account may not read its kubeconfig     SecretNotFound
//	render, plan or refusal of syncd's objects    RenderFailed
//	field conflicts blocked objects               FieldConflicts
//	objects not healthy when the wait ended       HealthCheckFailed
//	apply complete, prune or its record failed    PruneFailed
//	the app's own settings did not compile        InvalidSpec
//	any other failure of the apply                ApplyFailed
//
// err is the reconcile's error (it tells a failed prune from a failed
// apply, both StageApply); out.Stage says where it failed.
func ReasonOf(out Outcome, err error) v1alpha1.Reason {
	switch {
	case out.Result == ResultOK && err == nil:
		return v1alpha1.ReasonSucceeded
	case out.Stage == StageSource:
		return v1alpha1.ReasonSourceFailed
	case out.Stage == StageCluster:
		return v1alpha1.ReasonClusterUnreachable
	case errors.As(err, new(*SecretForbiddenError)):
		return v1alpha1.ReasonSecretNotFound
	case out.Stage == StageRender:
		return v1alpha1.ReasonRenderFailed
	case out.Result == ResultConflicts:
		return v1alpha1.ReasonConflicts
	case out.Result == ResultUnhealthy:
		return v1alpha1.ReasonUnhealthy
	case errors.As(err, new(*pruneError)):
		return v1alpha1.ReasonPruneFailed
	case out.Stage == "" && out.Rendered == nil:
		return v1alpha1.ReasonInvalidSpec
	}
	return v1alpha1.ReasonApplyFailed
}

// pruneError marks a failure after everything was applied: the prune of
// what left Git, or the inventory's record of it, did not complete. Its
// message is the failure's own.
type pruneError struct{ err error }

func (e *pruneError) Error() string { return e.err.Error() }
func (e *pruneError) Unwrap() error { return e.err }

// pruneFailed marks err (nil stays nil) as a failure of the prune.
func pruneFailed(err error) error {
	if err == nil {
		return nil
	}
	return &pruneError{err: err}
}
