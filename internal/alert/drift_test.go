package alert

import (
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/drift"
)

// TestDriftAlertsPairing: whatever way findings clear (one by one, several
// alerted apart clearing together), the resolved events carry exactly the
// fields of an alert sent before, so a sink can pair them; findings still
// drifting are alerted anew. Events are written "open:paths" or
// "resolved:paths@revision".
func TestDriftAlertsPairing(t *testing.T) {
	f := func(field string) drift.Finding {
		return drift.Finding{App: "web", Object: drift.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"},
			Path: ".data." + field, Class: drift.TakenOver, Culprit: "operator"}
	}
	info := f("x")
	info.Class = drift.Yielded
	type step struct {
		rev         string
		added, gone []drift.Finding
		want        []string
	}
	tests := map[string][]step{
		"alerted apart, resolved together": {
			{rev: "r1", added: []drift.Finding{f("color")}, want: []string{"open:.data.color"}},
			{rev: "r1", added: []drift.Finding{f("size")}, want: []string{"open:.data.size"}},
			{rev: "r2", gone: []drift.Finding{f("color"), f("size")}, want: []string{"resolved:.data.color@r2", "resolved:.data.size@r2"}},
		},
		"alerted together, resolved one by one": {
			{rev: "r1", added: []drift.Finding{f("color"), f("size")}, want: []string{"open:.data.color,.data.size"}},
			{rev: "r1", gone: []drift.Finding{f("color")}, want: []string{"resolved:.data.color,.data.size@r1", "open:.data.size"}},
			{rev: "tag@r2", gone: []drift.Finding{f("size")}, want: []string{"resolved:.data.size@r2"}},
		},
		"information and never-alerted findings send nothing": {
			{rev: "r1", added: []drift.Finding{info}},
			{rev: "r1", gone: []drift.Finding{info, f("color")}},
		},
	}
	for name, steps := range tests {
		t.Run(name, func(t *testing.T) {
			var a DriftAlerts
			for i, s := range steps {
				var got []string
				for _, ev := range a.Events(drift.Delta{App: "web", Revision: s.rev, New: s.added, Resolved: s.gone}) {
					var ps []string
					for _, fd := range ev.Fields {
						ps = append(ps, fd.Path)
					}
					e := "open:" + strings.Join(ps, ",")
					if ev.Resolved {
						e = "resolved:" + strings.Join(ps, ",") + "@" + ev.Revision
					}
					got = append(got, e)
				}
				if diff := cmp.Diff(s.want, got); diff != "" {
					t.Errorf("step %d (-want +got):\n%s", i, diff)
				}
			}
			if len(a.open) != 0 {
				t.Errorf("open groups left: %+v", a.open)
			}
		})
	}
}

// TestDriftResolvedSummary: a drift resolved because the field matches
// Git again says so; one resolved because the conflict policy now yields
// the field to the manager that took it says that instead (the watcher's
// delta then holds the field's yielded finding), naming the manager.
func TestDriftResolvedSummary(t *testing.T) {
	f := func(field string, class drift.Class) drift.Finding {
		return drift.Finding{App: "web", Object: drift.Object{APIVersion: "v1", Kind: "ConfigMap", Namespace: "ns", Name: "cm"},
			Path: ".data." + field, Class: class, Culprit: "operator"}
	}
	tests := map[string]struct {
		now  []drift.Finding
		want string
	}{
		"matches Git":        {want: "ConfigMap ns/cm matches Git again"},
		"yielded":            {now: []drift.Finding{f("color", drift.Yielded), f("size", drift.Yielded)}, want: "ConfigMap ns/cm: no drift left, its field(s) are now yielded to operator by the conflict policy"},
		"one of two yielded": {now: []drift.Finding{f("color", drift.Yielded)}, want: "ConfigMap ns/cm matches Git again"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			var a DriftAlerts
			a.Events(drift.Delta{App: "web", Revision: "r1", New: []drift.Finding{f("color", drift.TakenOver), f("size", drift.TakenOver)}})
			evs := a.Events(drift.Delta{App: "web", Revision: "r1", New: tc.now, Resolved: []drift.Finding{f("color", drift.TakenOver), f("size", drift.TakenOver)}})
			if len(evs) != 1 || !evs[0].Resolved || evs[0].Summary != tc.want {
				t.Fatalf("events %+v, want one resolved with summary %q", evs, tc.want)
			}
		})
	}
}
