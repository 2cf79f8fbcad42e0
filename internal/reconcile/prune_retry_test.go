package reconcile

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

func TestPruneIncomplete(t *testing.T) {
	cm := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "gone-004"}
	tests := []struct {
		name string
		rep  *inventory.Report
		want string
	}{
		{"no prune", nil, ""},
		{"all removed", &inventory.Report{Deleted: []planner.ObjectRef{cm}}, ""},
		{"a delete failed", &inventory.Report{Spared: []inventory.Spared{
			{Object: cm, Reason: inventory.ReasonError, Message: "delete: connection refused"},
		}}, "prune incomplete: 1 object(s) that left Git could not be removed and are retried; first: " + cm.String() + ": delete: connection refused"},
		{"a dry run's failure is not retried", &inventory.Report{DryRun: true, Spared: []inventory.Spared{{Object: cm, Reason: inventory.ReasonError}}}, ""},
		{"guards that refuse again are not retried", &inventory.Report{
			Refused: &inventory.Refusal{Reason: inventory.ReasonBudget},
			Spared:  []inventory.Spared{{Object: cm, Reason: inventory.ReasonBudget}, {Object: cm, Reason: inventory.ReasonProtected}},
		}, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := ""
			if err := pruneIncomplete(tt.rep); err != nil {
				got = err.Error()
			}
			if diff := cmp.Diff(tt.want, got); diff != "" {
				t.Errorf("pruneIncomplete (-want +got):\n%s", diff)
			}
		})
	}
}
