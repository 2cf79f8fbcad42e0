package alert

import (
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/drift"
)

// TestOverlapAlerts: the overlap of one object with one other app is
// alerted once, when its first field appears, whatever fields join it
// later, and resolved once, when its last field is gone; a drift finding
// beside it is no overlap alert, and an overlap is never a drift alert.
func TestOverlapAlerts(t *testing.T) {
	role := drift.Object{APIVersion: "rbac.authorization.k8s.io/v1", Kind: "ClusterRole", Name: "view"}
	overlap := func(path string) drift.Finding {
		return drift.Finding{App: "a", Object: role, Path: path, Class: drift.Overlap, OtherApp: "b", Culprit: "syncd-b"}
	}
	shared := drift.Finding{App: "a", Object: role, Path: ".rules", Class: drift.Shared, Culprit: "kubectl"}
	steps := []struct {
		delta      drift.Delta
		want       []string // "overlap open|resolved <summary>"
		wantDrifts int
	}{
		{delta: drift.Delta{New: []drift.Finding{overlap(".rules"), overlap(".metadata.labels.x")}},
			want: []string{"open overlap: ClusterRole view is also declared by app b (2 fields, same values); information, not drift"}},
		{delta: drift.Delta{New: []drift.Finding{overlap(".aggregationRule")}}},
		{delta: drift.Delta{New: []drift.Finding{shared}}, wantDrifts: 1},
		{delta: drift.Delta{Resolved: []drift.Finding{overlap(".rules"), overlap(".metadata.labels.x")}}},
		{delta: drift.Delta{Resolved: []drift.Finding{overlap(".aggregationRule")}},
			want: []string{"resolved ClusterRole view is no longer declared by both app a and app b"}},
	}
	var ov OverlapAlerts
	var dr DriftAlerts
	for i, st := range steps {
		st.delta.App = "a"
		var got []string
		for _, ev := range ov.Events(st.delta) {
			state := "open"
			if ev.Resolved {
				state = "resolved"
			}
			got = append(got, state+" "+ev.Summary)
			if ev.Type != "overlap" {
				t.Errorf("step %d: event type %q, want overlap", i, ev.Type)
			}
		}
		if diff := cmp.Diff(st.want, got); diff != "" {
			t.Errorf("step %d: overlap events (-want +got):\n%s", i, diff)
		}
		if n := len(dr.Events(st.delta)); n != st.wantDrifts {
			t.Errorf("step %d: %d drift events, want %d", i, n, st.wantDrifts)
		}
	}
}
