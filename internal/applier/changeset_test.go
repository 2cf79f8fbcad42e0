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

// TestPlainChangesHaveNoResolution: creates and updates that settle no
// conflict, hold nothing and migrate nothing carry no Resolution, so a
// ChangeSet of many objects holds a pointer per change and nothing more
// (the conflict, handoff and migration tests read what one carries).
func TestPlainChangesHaveNoResolution(t *testing.T) {
	rig := newMetadataRig(t, true)
	for _, version := range []string{"v1", "v2"} {
		cs, _ := rig.apply(t, metadataDocs(version)...)
		for _, c := range cs.Changes {
			if c.Resolved != nil {
				t.Errorf("%s (%s): Resolved = %+v, want nil", c, version, *c.Resolved)
			}
		}
		if len(cs.Changes) == 0 {
			t.Fatalf("%s: no changes", version)
		}
	}
}
