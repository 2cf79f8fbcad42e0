package alert

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/planner"
)

// TestClassifyPrune: what a prune report is worth telling. A dry run, a
// prune with nothing to do and a refusal with nothing that left Git are
// quiet; prune: false is shown in /status only; a guard that keeps
// objects is a refusal; deleted or orphaned objects are a removal.
func TestClassifyPrune(t *testing.T) {
	cm := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	refusal := func(r inventory.Reason) *inventory.Refusal {
		return &inventory.Refusal{Reason: r, Message: "not pruning"}
	}
	spared := []inventory.Spared{{Object: cm, Reason: inventory.ReasonBudget}}
	tests := map[string]struct {
		rep  *inventory.Report
		want PruneOutcome
	}{
		"not run":                 {rep: nil, want: PruneQuiet},
		"nothing to do":           {rep: &inventory.Report{}, want: PruneQuiet},
		"only gone":               {rep: &inventory.Report{Gone: []planner.ObjectRef{cm}}, want: PruneQuiet},
		"dry run":                 {rep: &inventory.Report{DryRun: true, Deleted: []planner.ObjectRef{cm}}, want: PruneQuiet},
		"source failed, no spare": {rep: &inventory.Report{Refused: refusal(inventory.ReasonSourceFailed)}, want: PruneQuiet},
		"deleted":                 {rep: &inventory.Report{Deleted: []planner.ObjectRef{cm}}, want: PruneRemoved},
		"orphaned":                {rep: &inventory.Report{Orphaned: []planner.ObjectRef{cm}}, want: PruneRemoved},
		"budget":                  {rep: &inventory.Report{Refused: refusal(inventory.ReasonBudget), Spared: spared}, want: PruneRefused},
		"forbidden":               {rep: &inventory.Report{Refused: refusal(inventory.ReasonForbidden), Spared: spared}, want: PruneRefused},
		"disabled":                {rep: &inventory.Report{Refused: refusal(inventory.ReasonDisabled), Spared: spared}, want: PruneDisabled},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, ClassifyPrune(tc.rep)); diff != "" {
				t.Errorf("ClassifyPrune (-want +got):\n%s", diff)
			}
		})
	}
}

// TestRemovedTextNamesAtMostTen: an Event names ten objects and counts
// the rest.
func TestRemovedTextNamesAtMostTen(t *testing.T) {
	var refs []planner.ObjectRef
	for _, n := range []string{"a", "b", "c", "d", "e", "f", "g", "h", "i", "j", "k", "l"} {
		refs = append(refs, planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: n})
	}
	got := RemovedText(&inventory.Report{Deleted: refs, Spared: []inventory.Spared{{Object: refs[0]}}})
	want := "12 deleted (v1 ConfigMap ns/a, v1 ConfigMap ns/b, v1 ConfigMap ns/c, v1 ConfigMap ns/d, v1 ConfigMap ns/e, v1 ConfigMap ns/f, v1 ConfigMap ns/g, v1 ConfigMap ns/h, v1 ConfigMap ns/i, v1 ConfigMap ns/j, and 2 more), 1 spared"
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("RemovedText (-want +got):\n%s", diff)
	}
}

// TestPruneEventText: the Event both drivers record for a prune names the
// revision and the objects (Pruned), says when every object that left was
// kept on request (PruneKept), names the guard that refused (a Warning),
// and is left out for a prune worth nothing; with no revision the message
// does not begin "revision : ".
func TestPruneEventText(t *testing.T) {
	cm := planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "a"}
	tests := map[string]struct {
		short string
		rep   *inventory.Report
		want  []string // type, reason, message; nil: no Event
	}{
		"deleted": {"0da179a25d5f", &inventory.Report{Deleted: []planner.ObjectRef{cm}},
			[]string{"Normal", "Pruned", "revision 0da179a25d5f: 1 deleted (v1 ConfigMap ns/a)"}},
		"kept on request": {"0da179a25d5f", &inventory.Report{Kept: []inventory.Kept{{Object: cm}}},
			[]string{"Normal", "PruneKept", "revision 0da179a25d5f: 1 kept in the cluster and dropped from the inventory, prune disabled on the object (v1 ConfigMap ns/a)"}},
		"refused": {"0da179a25d5f", &inventory.Report{Refused: &inventory.Refusal{Reason: inventory.ReasonBudget, Message: "would delete 1 of 1"}, Spared: []inventory.Spared{{Object: cm, Reason: inventory.ReasonBudget}}},
			[]string{"Warning", "PruneRefused", "revision 0da179a25d5f: 1 object(s) that left Git stay (guard budget): would delete 1 of 1"}},
		"no revision": {"", &inventory.Report{Deleted: []planner.ObjectRef{cm}},
			[]string{"Normal", "Pruned", "1 deleted (v1 ConfigMap ns/a)"}},
		"nothing": {"0da179a25d5f", &inventory.Report{}, nil},
		"dry run": {"0da179a25d5f", &inventory.Report{DryRun: true, Deleted: []planner.ObjectRef{cm}}, nil},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			typ, reason, msg, ok := PruneEventText(tc.short, tc.rep)
			var got []string
			if ok {
				got = []string{typ, reason, msg}
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("PruneEventText (-want +got):\n%s", diff)
			}
		})
	}
}
