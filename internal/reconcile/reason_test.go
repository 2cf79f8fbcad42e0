package reconcile

import (
	"errors"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// TestReasonOf: every stage a reconcile can fail in has one reason, the
// one both drivers report (the file daemon's Event, the App's Event and
// Ready condition).
func TestReasonOf(t *testing.T) {
	rendered := &Rendered{Plan: &planner.Plan{}}
	failed := errors.New("boom")
	cm := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "gone"}
	incomplete := pruneIncomplete(&inventory.Report{Spared: []inventory.Spared{{Object: cm, Reason: inventory.ReasonError}}})
	tests := map[string]struct {
		out  Outcome
		err  error
		want v1alpha1.Reason
	}{
		"applied":                {out: Outcome{Result: ResultOK, Rendered: rendered}, want: v1alpha1.ReasonSucceeded},
		"source poll failed":     {out: Outcome{Result: ResultFailed, Stage: StageSource}, err: failed, want: v1alpha1.ReasonSourceFailed},
		"cluster unreachable":    {out: Outcome{Result: ResultFailed, Stage: StageCluster}, err: failed, want: v1alpha1.ReasonClusterUnreachable},
		"kubeconfig forbidden":   {out: Outcome{Result: ResultFailed, Stage: StageRender}, err: fmt.Errorf("app web: cluster.secretRef: %w", &SecretForbiddenError{Secret: "prod"}), want: v1alpha1.ReasonSecretNotFound},
		"render failed":          {out: Outcome{Result: ResultFailed, Stage: StageRender}, err: failed, want: v1alpha1.ReasonRenderFailed},
		"apply failed":           {out: Outcome{Result: ResultFailed, Stage: StageApply, Rendered: rendered}, err: failed, want: v1alpha1.ReasonApplyFailed},
		"field conflicts":        {out: Outcome{Result: ResultConflicts, Stage: StageApply, Rendered: rendered}, err: failed, want: v1alpha1.ReasonConflicts},
		"unhealthy":              {out: Outcome{Result: ResultUnhealthy, Stage: StageApply, Rendered: rendered}, err: failed, want: v1alpha1.ReasonUnhealthy},
		"prune incomplete":       {out: Outcome{Result: ResultFailed, Stage: StageApply, Rendered: rendered}, err: incomplete, want: v1alpha1.ReasonPruneFailed},
		"prune write failed":     {out: Outcome{Result: ResultFailed, Stage: StageApply, Rendered: rendered}, err: fmt.Errorf("app web: %w", pruneFailed(failed)), want: v1alpha1.ReasonPruneFailed},
		"settings not compiled":  {out: Outcome{Result: ResultFailed}, err: failed, want: v1alpha1.ReasonInvalidSpec},
		"drift watcher not made": {out: Outcome{Result: ResultFailed, Rendered: rendered}, err: failed, want: v1alpha1.ReasonApplyFailed},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, ReasonOf(tt.out, tt.err)); diff != "" {
				t.Errorf("ReasonOf (-want +got):\n%s", diff)
			}
		})
	}
}
