package daemon

import (
	"errors"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/source"
)

const (
	rev1 = "1111111111111111111111111111111111111111"
	rev2 = "2222222222222222222222222222222222222222"
)

func TestWaitFor(t *testing.T) {
	tests := map[string]struct {
		dep  dependencyState
		want *DependencyWait
	}{
		"ok at the current revision: ready": {
			dep: dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultOK, Revision: rev1}, current: rev1},
		},
		"ok at an older revision: not applied": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultOK, Revision: rev1}, current: rev2},
			want: &DependencyWait{App: "db", Reason: WaitNotApplied, Revision: rev2, Message: "db has not reconciled revision 222222222222 yet (its last reconcile, of 111111111111, ended ok)"},
		},
		"never reconciled": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: ResultPending}, current: rev1},
			want: &DependencyWait{App: "db", Reason: WaitNotApplied, Revision: rev1, Message: "db has not reconciled revision 111111111111 yet"},
		},
		"failed at the current revision": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultFailed, Revision: rev1, Error: "boom"}, current: rev1},
			want: &DependencyWait{App: "db", Reason: WaitFailed, Revision: rev1, Message: "db: its last reconcile of revision 111111111111 ended failed: boom"},
		},
		"unhealthy at the current revision (it waits)": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultUnhealthy, Revision: rev1, Error: "1 object(s) not healthy"}, current: rev1},
			want: &DependencyWait{App: "db", Reason: WaitFailed, Revision: rev1, Message: "db: its last reconcile of revision 111111111111 ended unhealthy: 1 object(s) not healthy"},
		},
		"conflicts at the current revision": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultConflicts, Revision: rev1, Error: "1 object(s) blocked"}, current: rev1},
			want: &DependencyWait{App: "db", Reason: WaitFailed, Revision: rev1, Message: "db: its last reconcile of revision 111111111111 ended conflicts: 1 object(s) blocked"},
		},
		"failed at an older revision, the current one not tried": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultFailed, Revision: rev1}, current: rev2},
			want: &DependencyWait{App: "db", Reason: WaitNotApplied, Revision: rev2, Message: "db has not reconciled revision 222222222222 yet (its last reconcile, of 111111111111, ended failed)"},
		},
		"its source fails after it applied the current revision ok: ready": {
			dep: dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultFailed, Revision: rev1, Error: "source down", InForceOK: true}, current: rev1},
		},
		"its source fails after the current revision ended in conflicts": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultFailed, Revision: rev1, Error: "source down"}, current: rev1},
			want: &DependencyWait{App: "db", Reason: WaitFailed, Revision: rev1, Message: "db: its last reconcile of revision 111111111111 ended failed: source down"},
		},
		"waiting itself": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: ResultWaiting, Revision: rev1}, current: rev1},
			want: &DependencyWait{App: "db", Reason: WaitWaiting, Revision: rev1, Message: "db waits for its own dependencies"},
		},
		"no revision yet": {
			dep:  dependencyState{name: "db", status: &AppStatus{Result: reconcile.ResultFailed, Error: "source down"}},
			want: &DependencyWait{App: "db", Reason: WaitNoRevision, Message: "db: its source has not resolved a revision yet"},
		},
		"another shard": {
			dep:  dependencyState{name: "db", current: rev1},
			want: &DependencyWait{App: "db", Reason: WaitOtherShard, Revision: rev1, Message: "db runs in another shard; this replica cannot see its applies (dependsOn across shards is not supported)"},
		},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, waitFor(tt.dep)); diff != "" {
				t.Errorf("waitFor (-want +got):\n%s", diff)
			}
		})
	}
}

func TestNextWait(t *testing.T) {
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	t1 := t0.Add(time.Minute)
	on := []DependencyWait{{App: "db", Reason: WaitFailed}}
	tests := map[string]struct {
		prev  *WaitStatus
		rev   string
		waits []DependencyWait
		want  *WaitStatus
	}{
		"nothing to wait for":          {prev: &WaitStatus{Revision: rev1, Since: t0}, rev: rev1},
		"starts waiting":               {rev: rev1, waits: on, want: &WaitStatus{Revision: rev1, Since: t1, On: on}},
		"still waiting, same revision": {prev: &WaitStatus{Revision: rev1, Since: t0}, rev: rev1, waits: on, want: &WaitStatus{Revision: rev1, Since: t0, On: on}},
		"a newer revision waits anew":  {prev: &WaitStatus{Revision: rev1, Since: t0}, rev: rev2, waits: on, want: &WaitStatus{Revision: rev2, Since: t1, On: on}},
	}
	for name, tt := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, nextWait(tt.prev, tt.rev, tt.waits, t1)); diff != "" {
				t.Errorf("nextWait (-want +got):\n%s", diff)
			}
		})
	}
}

// TestDependenciesWake: a dependency settling wakes each of its
// dependents once (a pending wake-up is enough), and nobody else; a
// failed poll records no revision.
func TestDependenciesWake(t *testing.T) {
	g := newDependencies([]config.App{
		{Name: "a", AppSpec: config.AppSpec{DependsOn: []string{"b"}}},
		{Name: "b", AppSpec: config.AppSpec{DependsOn: []string{"c"}}},
		{Name: "c"},
		{Name: "d", AppSpec: config.AppSpec{DependsOn: []string{"c"}}},
	})
	woken := func() []string {
		var out []string
		for _, app := range []string{"a", "b", "c", "d"} {
			select {
			case <-g.wakeup(app):
				out = append(out, app)
			default:
			}
		}
		return out
	}
	g.settled("c")
	g.settled("c")
	if diff := cmp.Diff([]string{"b", "d"}, woken()); diff != "" {
		t.Errorf("c settled twice woke (-want +got):\n%s", diff)
	}
	g.settled("a")
	if got := woken(); len(got) != 0 {
		t.Errorf("a, which nothing depends on, woke %v", got)
	}

	works := func(sha string) []appWork {
		return []appWork{{app: config.App{Name: "b"}, rev: source.Revision{SHA: sha}}, {app: config.App{Name: "c"}, rev: source.Revision{SHA: sha}}}
	}
	g.resolved(source.Event{Revision: source.Revision{SHA: rev1}}, works(rev1))
	g.resolved(source.Event{Revision: source.Revision{SHA: rev2}, Err: errors.New("poll failed")}, works(rev2))
	if got := g.currentRevision("c"); got != rev1 {
		t.Errorf("current revision of c = %q, want %q (a failed poll keeps the last one)", got, rev1)
	}
}
