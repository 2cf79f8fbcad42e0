package applier

import (
	"errors"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// TestAdmissionDenied: a ConfigMap an admission policy denies fails with
// the server's message verbatim and the object's name, and is not taken
// for an RBAC problem even when the denial is a 403 Forbidden (as webhook
// denials usually are). The denial is found by the stage's dry run, so
// the good ConfigMap beside it is not written either; with validation
// off (apps[].validate: false) it is.
func TestAdmissionDenied(t *testing.T) {
	forbidden := metav1.StatusReasonForbidden
	tests := map[string]struct {
		reason         *metav1.StatusReason
		skipValidation bool
		wantStatus     int32
		wantFine       string
	}{
		"default reason (Invalid)":         {wantStatus: 422, wantFine: "skipped"},
		"reason Forbidden":                 {reason: &forbidden, wantStatus: 403, wantFine: "skipped"},
		"reason Forbidden, validation off": {reason: &forbidden, skipValidation: true, wantStatus: 403, wantFine: "created"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := newCluster(t, env.Config)
			ns := env.Namespace(t)
			message := env.DenyForbiddenKey(t, ns, "denied", tc.reason)
			plan := c.plan(t, appOf("app", ns),
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: denied\ndata:\n  forbidden: x\n",
				"apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: fine\ndata:\n  k: v\n")
			cs := c.apply(t, plan, ApplyOptions{SkipValidation: tc.skipValidation})
			wantChanges(t, cs, "ConfigMap denied syncd-app failed", "ConfigMap fine syncd-app "+tc.wantFine)
			got := cs.Changes[0].Err
			if got == nil {
				t.Fatal("no error on the denied ConfigMap")
			}
			t.Logf("change error: %v", got)
			var status apierrors.APIStatus
			if !errors.As(got, &status) || status.Status().Code != tc.wantStatus {
				t.Errorf("error does not wrap the server's %d status: %v", tc.wantStatus, got)
			}
			for _, want := range []string{"ConfigMap " + ns + "/denied: ", message} {
				if !strings.Contains(got.Error(), want) {
					t.Errorf("error lacks %q:\n%v", want, got)
				}
			}
			if strings.Contains(got.Error(), "grant the identity") {
				t.Errorf("an admission denial is described as missing RBAC:\n%v", got)
			}
		})
	}
}
