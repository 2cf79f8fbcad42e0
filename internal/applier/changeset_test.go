package applier

import "testing"

func TestChangeWrote(t *testing.T) {
	tests := map[string]struct {
		c    Change
		want bool
	}{
		"created":                   {Change{Action: Created}, true},
		"recreated":                 {Change{Action: Recreated}, true},
		"configured":                {Change{Action: Configured, Changed: []string{".data.a"}}, true},
		"unchanged":                 {Change{Action: Unchanged}, false},
		"yielded, nothing written":  {Change{Action: Yielded, Resolved: &Resolution{Yielded: Conflicts{{Path: ".data.a"}}}}, false},
		"yielded and written":       {Change{Action: Yielded, Changed: []string{".data.b"}}, true},
		"forced and written":        {Change{Action: Forced, Changed: []string{".data.a"}}, true},
		"handoff pending, no write": {Change{Action: HandoffPending}, false},
		"conflict":                  {Change{Action: Conflicted}, false},
		"failed":                    {Change{Action: Failed}, false},
		"skipped":                   {Change{Action: Skipped}, false},
	}
	cs := &ChangeSet{}
	n := 0
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := tc.c.Wrote(); got != tc.want {
				t.Errorf("Wrote() = %v, want %v", got, tc.want)
			}
		})
		cs.Changes = append(cs.Changes, tc.c)
		if tc.want {
			n++
		}
	}
	if got := cs.Written(); got != n {
		t.Errorf("Written() = %d, want %d", got, n)
	}
}
