package ui

import "time"

// FileStatusSource tells the status a daemon keeps of the syncd.yaml
// apps it runs (what `syncd run` serves on /status); syncd run's own UI
// has one, syncd ui does not.
type FileStatusSource interface {
	FileStatus() map[string]FileAppStatus
}

// FileAppStatus is one file app's status as its daemon last saw it.
type FileAppStatus struct {
	// Ready is "True", "False" or "Unknown" (not reconciled yet);
	// Message says why.
	Ready   string
	Message string
	// Drift, Conflicts and Overlaps are counts, as the Apps page shows
	// them.
	Drift, Conflicts, Overlaps int
	LastSync                   *time.Time
}

// fromStatus fills a file app's row from its daemon's status, which is
// newer and fuller than its last recorded apply.
func fromStatus(row *AppRow, st FileAppStatus) {
	row.Ready, row.Message = st.Ready, st.Message
	row.Drift, row.Conflicts, row.Overlaps = st.Drift, st.Conflicts, st.Overlaps
	if st.LastSync != nil {
		row.LastSync = st.LastSync
	}
}
