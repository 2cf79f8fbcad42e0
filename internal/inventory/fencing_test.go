package inventory

import (
	"context"
	"net/http"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

const (
	revOld = "1111111111111111111111111111111111111111"
	revNew = "2222222222222222222222222222222222222222"
)

// syncWith runs one reconcile of the fixture's app through m at rev.
func (f *fixture) syncWith(m *Manager, plan *planner.Plan, rev string) *Report {
	f.t.Helper()
	ctx := context.Background()
	run, err := m.Begin(ctx, invApp(f.app), plan, false)
	if err != nil {
		f.t.Fatalf("Begin at %s: %v", rev[:4], err)
	}
	return f.finishAt(run, plan, rev)
}

// finishAt applies plan in a run Begin started and finishes it at rev.
func (f *fixture) finishAt(run *Run, plan *planner.Plan, rev string) *Report {
	f.t.Helper()
	run.SetRevision(rev)
	policy, err := applier.NewPolicy(applier.PolicySpec{})
	if err != nil {
		f.t.Fatal(err)
	}
	cs, err := f.applier.Apply(context.Background(), plan, run.Hooks(applier.ApplyOptions{Policy: policy, RecordManagers: true}))
	if err != nil || !cs.OK() {
		f.t.Fatalf("apply at %s: %v (ok=%v)", rev[:4], err, cs != nil && cs.OK())
	}
	rep, err := run.Finish(context.Background(), cs, nil)
	if err != nil {
		f.t.Fatalf("Finish at %s: %v", rev[:4], err)
	}
	return rep
}

// TestTwoWritersFenced: two writers (two Managers, as two replicas during
// a re-shard) run one app at different revisions, interleaved. The older
// writer read the inventory before the newer one applied and wrote it;
// when the older one then writes and prunes, nothing the newer revision
// holds is deleted, and the inventory ends with every member of both
// (the older write re-read and merged), at the newer revision.
func TestTwoWritersFenced(t *testing.T) {
	tests := map[string]struct {
		older []string
		// newerDuringBegin runs the newer writer while the older one's
		// Begin writes its superset (else between Begin and Finish).
		newerDuringBegin bool
	}{
		"newer writes between the older's read and its prune": {older: []string{"a", "b"}},
		"newer writes while the older's Begin writes":         {older: []string{"a", "b", "extra"}, newerDuringBegin: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, config.App{AppSpec: config.AppSpec{PruneBudget: ptr(100)}}, Options{})
			f.syncWith(f.m, f.plan(f.cms("a", "b", "c")...), revOld)
			newer, err := New(f.dyn, f.md, f.mapper, Options{Namespace: f.m.opts.Namespace, Registerer: prometheus.NewRegistry()})
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(newer.Stop)
			newerPlan := f.plan(f.cms("a", "b", "c", "x")...)
			runNewer := func() { f.syncWith(newer, newerPlan, revNew) }

			olderPlan := f.plan(f.cms(tc.older...)...)
			var fired atomic.Bool
			if tc.newerDuringBegin {
				// The older writer's first write of the parent: let the
				// newer writer apply and write the inventory first.
				f.count.onRequest = func(req *http.Request) {
					if req.Method == http.MethodPatch && strings.HasSuffix(req.URL.Path, "/secrets/"+ParentName(f.app.Name)) && fired.CompareAndSwap(false, true) {
						runNewer()
					}
				}
			}
			run, err := f.m.Begin(context.Background(), invApp(f.app), olderPlan, false)
			if err != nil {
				t.Fatal(err)
			}
			f.count.onRequest = nil
			if tc.newerDuringBegin && !fired.Load() {
				t.Fatal("the older writer's Begin never wrote the parent")
			}
			if !tc.newerDuringBegin {
				runNewer()
			}
			rep := f.finishAt(run, olderPlan, revOld)

			if rep.Refused == nil || rep.Refused.Reason != ReasonInventoryChanged {
				t.Errorf("older prune: refused = %+v, want reason %s", rep.Refused, ReasonInventoryChanged)
			}
			if len(rep.Deleted)+len(rep.Orphaned) != 0 {
				t.Errorf("older prune removed %v %v, want nothing", names(rep.Deleted), names(rep.Orphaned))
			}
			wantMembers := []string{"a", "b", "c", "x"}
			if tc.newerDuringBegin {
				wantMembers = append(wantMembers[:2], "c", "extra", "x")
			}
			if diff := cmp.Diff(wantMembers, f.presentCMs()); diff != "" {
				t.Errorf("ConfigMaps (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(wantMembers, f.members()); diff != "" {
				t.Errorf("inventory members (-want +got):\n%s", diff)
			}
			inv, err := f.m.Load(context.Background(), f.app.Name)
			if err != nil {
				t.Fatal(err)
			}
			if inv.Revision != revNew {
				t.Errorf("inventory revision = %s, want the newer writer's %s", inv.Revision, revNew)
			}
			if got := f.blocked(ReasonInventoryChanged); got != 1 {
				t.Errorf("prune blocked{reason=inventory-changed} = %v, want 1", got)
			}
		})
	}
}

// TestRewoundRefusesPrune: a run marked Rewound applies, prunes nothing
// (reason rewound) and leaves the recorded revision at the last one
// pruned; the next run that is not a rewind prunes and records its own.
func TestRewoundRefusesPrune(t *testing.T) {
	f := newFixture(t, config.App{AppSpec: config.AppSpec{PruneBudget: ptr(100)}}, Options{})
	f.syncWith(f.m, f.plan(f.cms("a", "b", "c")...), revNew)

	rewound := f.plan(f.cms("a")...)
	run, err := f.m.Begin(context.Background(), invApp(f.app), rewound, false)
	if err != nil {
		t.Fatal(err)
	}
	if run.Revision() != revNew {
		t.Fatalf("Revision() = %q, want %s", run.Revision(), revNew)
	}
	run.Rewound("not pruning: rewound")
	rep := f.finishAt(run, rewound, revOld)
	inv, err := f.m.Load(context.Background(), f.app.Name)
	if err != nil {
		t.Fatal(err)
	}
	type state struct {
		Refused         Reason
		Present, Member []string
		Revision        string
	}
	reason := func(rep *Report) Reason {
		if rep.Refused == nil {
			return ""
		}
		return rep.Refused.Reason
	}
	got := state{reason(rep), f.presentCMs(), f.members(), inv.Revision}
	want := state{ReasonRewound, []string{"a", "b", "c"}, []string{"a", "b", "c"}, revNew}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("rewound run (-want +got):\n%s", diff)
	}

	rep = f.syncWith(f.m, rewound, revOld)
	if inv, err = f.m.Load(context.Background(), f.app.Name); err != nil {
		t.Fatal(err)
	}
	got = state{reason(rep), f.presentCMs(), f.members(), inv.Revision}
	want = state{"", []string{"a"}, []string{"a"}, revOld}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("run after the rewind (-want +got):\n%s", diff)
	}
}
