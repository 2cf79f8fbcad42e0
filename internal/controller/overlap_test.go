package controller

import (
	"fmt"
	"testing"
)

// TestAppStatusCountsOverlaps: two Apps declaring the same ConfigMap with
// the same values (two installs of one project) both become Ready, and
// each App's status.drift counts the overlap, with no drift finding.
func TestAppStatusCountsOverlaps(t *testing.T) {
	r := newRig(t, "1h")
	r.app("web", "web", "")
	r.waitReady("web", r.sha)
	r.app("web-again", "web", "")
	r.waitReady("web-again", r.sha)
	for _, name := range []string{"web", "web-again"} {
		eventually(t, "App "+name+" counts one overlap", func() (bool, string) {
			app, _, err := r.get(name)
			if err != nil {
				return false, err.Error()
			}
			d := app.Status.Drift
			return d != nil && d.Overlaps == 1 && d.Findings == 0, fmt.Sprintf("%+v", d)
		})
	}
}
