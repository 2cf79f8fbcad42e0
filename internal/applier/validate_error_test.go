package applier

import (
	"errors"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"syncd.dev/syncd/internal/planner"
)

// TestStageRefusedErrorSaysWhatToDo checks the advice of a refused stage:
// an object the API server refuses is to be fixed in Git; a webhook the
// API server could not call (its Service has no endpoints, as right
// after an ingress controller's install) is named, and Git is not
// blamed.
func TestStageRefusedErrorSaysWhatToDo(t *testing.T) {
	hook := apierrors.NewInternalError(errors.New(`failed calling webhook "validate.nginx.ingress.kubernetes.io": failed to call webhook: ` +
		`Post "https://ingress-nginx-controller-admission.ingress-nginx.svc:443/networking/v1/ingresses?timeout=10s": no endpoints available for service "ingress-nginx-controller-admission"`))
	invalid := apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "web", nil)
	tests := map[string]struct {
		err          error
		want, absent string
	}{
		"webhook without endpoints": {err: hook, want: `the admission webhook "validate.nginx.ingress.kubernetes.io" could not be called`, absent: "fix the object in Git"},
		"wrapped webhook error":     {err: fmt.Errorf("networking.k8s.io/Ingress web/web: apply as syncd-web: %w", hook), want: "could not be called", absent: "fix the object in Git"},
		"object refused":            {err: invalid, want: "fix the object in Git", absent: "webhook"},
		"other internal error":      {err: apierrors.NewInternalError(errors.New("etcdserver: request timed out")), want: "fix the object in Git", absent: "webhook"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := (&StageRefusedError{Stage: planner.StageNamespaced, Err: tc.err}).Error()
			if !strings.Contains(got, tc.want) || strings.Contains(got, tc.absent) {
				t.Errorf("Error() = %q; want it to contain %q and not %q", got, tc.want, tc.absent)
			}
		})
	}
}
