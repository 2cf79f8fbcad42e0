package daemon

import (
	"strings"

	"syncd.dev/syncd/internal/planner"
)

// maxStatusWarnings bounds the warnings /status shows for one app.
const maxStatusWarnings = 20

// reportWarnings tells of the warnings of the app's last render
// (kustomize's deprecated fields, objects the planner fixed): /status
// shows them while they last, and the log has one WARN line per warning
// when the set changes, not at every sync.
func (a *appRun) reportWarnings(warnings []planner.Warning) {
	lines := make([]string, 0, len(warnings))
	for _, w := range warnings {
		lines = append(lines, w.String())
	}
	key := strings.Join(lines, "\n")
	if key == a.warned {
		return
	}
	a.warned = key
	for _, line := range lines {
		a.d.log.Warn("render warning: "+line, "app", a.app.Name)
	}
	if len(lines) > maxStatusWarnings {
		lines = lines[:maxStatusWarnings]
	}
	a.d.setStatus(a.app.Name, func(s *AppStatus) { s.Warnings = lines })
}
