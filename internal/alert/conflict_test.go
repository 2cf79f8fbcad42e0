package alert

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/planner"
)

// conflictView is what a test checks of a conflict alert.
type conflictView struct {
	Resolved bool
	Object   string
	Paths    []string
	Managers []string
}

func viewConflicts(evs []Event) []conflictView {
	var out []conflictView
	for _, ev := range evs {
		v := conflictView{Resolved: ev.Resolved, Object: ev.Object.Name}
		for _, f := range ev.Fields {
			v.Paths = append(v.Paths, f.Path)
			v.Managers = append(v.Managers, f.Culprit.Manager)
		}
		out = append(out, v)
	}
	return out
}

func TestConflictAlerts(t *testing.T) {
	ref := func(name string) planner.ObjectRef {
		return planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: name}
	}
	conflicted := func(name string, cs ...applier.Conflict) applier.Change {
		return applier.Change{Object: ref(name), Manager: "syncd-shop", Action: applier.Conflicted, Conflicts: cs}
	}
	applied := func(name string, a applier.Action) applier.Change {
		return applier.Change{Object: ref(name), Manager: "syncd-shop", Action: a}
	}
	color := applier.Conflict{Path: ".data.color", Manager: "ops", Operation: "Apply", Time: "2026-11-29T23:07:05Z"}
	size := applier.Conflict{Path: ".data.size", Manager: "ops", Operation: "Apply"}
	open := func(name string, paths ...string) conflictView {
		v := conflictView{Object: name, Paths: paths}
		for range paths {
			v.Managers = append(v.Managers, "ops")
		}
		return v
	}
	resolved := func(v conflictView) conflictView { v.Resolved = true; return v }
	tests := map[string]struct {
		applies [][]applier.Change // nil: the reconcile never applied
		want    [][]conflictView
	}{
		"a conflict stays open while it repeats and resolves when the slice is applied": {
			applies: [][]applier.Change{{conflicted("a", color)}, {conflicted("a", color)}, nil, {applied("a", applier.Yielded)}},
			want:    [][]conflictView{{open("a", ".data.color")}, {open("a", ".data.color")}, nil, {resolved(open("a", ".data.color"))}},
		},
		"a slice skipped or failed keeps its conflict open": {
			applies: [][]applier.Change{{conflicted("a", color)}, {applied("a", applier.Skipped)}, {applied("a", applier.Failed)}, {applied("a", applier.Unchanged)}},
			want:    [][]conflictView{{open("a", ".data.color")}, nil, nil, {resolved(open("a", ".data.color"))}},
		},
		"other conflicting fields are a new alert and the old one is resolved": {
			applies: [][]applier.Change{{conflicted("a", color)}, {conflicted("a", color, size)}},
			want:    [][]conflictView{{open("a", ".data.color")}, {open("a", ".data.color", ".data.size"), resolved(open("a", ".data.color"))}},
		},
		"an object that left the plan resolves its conflict": {
			applies: [][]applier.Change{{conflicted("a", color), conflicted("b", size)}, {applied("b", applier.Configured)}},
			want: [][]conflictView{
				{open("a", ".data.color"), open("b", ".data.size")},
				{resolved(open("b", ".data.size")), resolved(open("a", ".data.color"))},
			},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var ca ConflictAlerts
			var got [][]conflictView
			for _, changes := range tc.applies {
				var cs *applier.ChangeSet
				if changes != nil {
					cs = &applier.ChangeSet{App: "shop", Revision: "r1", Changes: changes}
				}
				got = append(got, viewConflicts(ca.Events("shop", cs, t0)))
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("events per apply (-want +got):\n%s", diff)
			}
		})
	}
}

func TestConflictCulpritTime(t *testing.T) {
	var ca ConflictAlerts
	cs := &applier.ChangeSet{App: "shop", Revision: "r1", Changes: []applier.Change{{
		Object: planner.ObjectRef{Version: "v1", Kind: "ConfigMap", Namespace: "shop", Name: "a"}, Manager: "syncd-shop", Action: applier.Conflicted,
		Conflicts: applier.Conflicts{{Path: ".data.color", Manager: "kubectl-edit", Operation: "Update", Time: "2026-11-29T23:07:05Z"}},
	}}}
	evs := ca.Events("shop", cs, t0)
	want := Culprit{Manager: "kubectl-edit", Operation: "Update", Time: time.Date(2026, 11, 29, 23, 7, 5, 0, time.UTC)}
	if len(evs) != 1 || len(evs[0].Fields) != 1 {
		t.Fatalf("events = %+v, want one conflict on one field", evs)
	}
	if diff := cmp.Diff(want, evs[0].Fields[0].Culprit); diff != "" {
		t.Errorf("culprit (-want +got):\n%s", diff)
	}
}

// TestInheritAndResolveApp checks that a Notifier built for a new config
// resolves, once, what the old one alerted, and that ResolveApp closes
// every open finding of an app that is gone.
func TestInheritAndResolveApp(t *testing.T) {
	rec := newRecorder(t)
	sink := testAlert(t, "ops", SinkWebhook, rec.URL)
	old := mustNew(t, []Sink{sink}, testOptions(newFakeClock()))
	drift := driftEvent()
	other := driftEvent()
	other.App = "gone"
	failure := Event{Type: EventError, App: "web", Cause: "stage=render result=failed revision=r1", Summary: "bad yaml"}
	old.Notify(drift)
	old.Notify(other)
	old.Notify(failure)
	old.Notify(Event{Type: EventSync, App: "web", Revision: "r1"})
	closeNotifier(t, old)

	n := mustNew(t, []Sink{sink}, testOptions(newFakeClock()))
	n.Inherit(old)
	n.Notify(drift) // still open: not sent again
	n.ResolveApp("gone", "app gone was removed from the config")
	resolvedDrift := drift
	resolvedDrift.Resolved = true
	n.Notify(resolvedDrift)
	resolvedFailure := failure
	resolvedFailure.Resolved = true
	n.Notify(resolvedFailure)
	n.Notify(Event{Type: EventSync, App: "web", Revision: "r1"}) // one-shot memory is not inherited
	closeNotifier(t, n)

	type got struct{ Type, State, App, Fingerprint string }
	var gots []got
	for _, r := range rec.Requests() {
		var p webhookSchema
		decodeStrict(t, r.Body, &p)
		gots = append(gots, got{p.Type, p.State, p.App, p.Fingerprint})
	}
	if len(gots) != 8 {
		t.Fatalf("sent %d alerts, want 8: %+v", len(gots), gots)
	}
	want := []got{
		{"drift", "open", "web", gots[0].Fingerprint},
		{"drift", "open", "gone", gots[1].Fingerprint},
		{"error", "open", "web", gots[2].Fingerprint},
		{"sync", "open", "web", gots[3].Fingerprint},
		{"drift", "resolved", "gone", gots[1].Fingerprint},
		{"drift", "resolved", "web", gots[0].Fingerprint},
		{"error", "resolved", "web", gots[2].Fingerprint},
		{"sync", "open", "web", gots[3].Fingerprint},
	}
	if diff := cmp.Diff(want, gots); diff != "" {
		t.Errorf("sent (-want +got):\n%s", diff)
	}
}
