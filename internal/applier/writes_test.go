package applier

import (
	"testing"

	"github.com/google/go-cmp/cmp"
)

func TestWrites(t *testing.T) {
	written := []string{".spec.template.spec.containers[name=\"app\"].image"}
	tests := map[string]struct {
		changes []Change
		want    Writes
		text    string
	}{
		"nothing": {
			want: Writes{}, text: "0 created, 0 configured",
		},
		"created and configured": {
			changes: []Change{{Action: Created}, {Action: Configured, Changed: written}, {Action: Unchanged}},
			want:    Writes{Created: 1, Configured: 1}, text: "1 created, 1 configured",
		},
		"a forced revert is a write": {
			changes: []Change{{Action: Forced, Changed: written}, {Action: Unchanged}},
			want:    Writes{Forced: 1}, text: "0 created, 0 configured, 1 forced",
		},
		"a force the server did not write is not": {
			changes: []Change{{Action: Forced}},
			want:    Writes{}, text: "0 created, 0 configured",
		},
		"recreated, yielded and handed off": {
			changes: []Change{{Action: Recreated}, {Action: Yielded, Changed: written}, {Action: Yielded}, {Action: HandoffPending, Changed: written}},
			want:    Writes{Recreated: 1, Yielded: 1, HandedOff: 1}, text: "0 created, 0 configured, 1 recreated, 1 yielded, 1 handed off",
		},
		"failures write nothing": {
			changes: []Change{{Action: Failed}, {Action: Conflicted}, {Action: Skipped}, {Action: Excluded}},
			want:    Writes{}, text: "0 created, 0 configured",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			cs := &ChangeSet{Changes: tc.changes}
			got := cs.Writes()
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("Writes (-want +got):\n%s", diff)
			}
			if got.String() != tc.text {
				t.Errorf("String() = %q, want %q", got.String(), tc.text)
			}
			if got.Total() != cs.Written() {
				t.Errorf("Total() = %d, Written() = %d: they count the same writes", got.Total(), cs.Written())
			}
		})
	}
	if got := (*ChangeSet)(nil).Writes(); got != (Writes{}) {
		t.Errorf("nil ChangeSet: Writes = %+v, want none", got)
	}
}
