package main

import (
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/ui"
)

// TestFileAppStatus: the daemon's status of a file app becomes the UI's
// Ready (True only when the last reconcile applied everything, Unknown
// before the first), counts and last sync.
func TestFileAppStatus(t *testing.T) {
	at := time.Date(2026, 12, 5, 8, 0, 0, 0, time.UTC)
	tests := map[string]struct {
		in   daemon.AppStatus
		want ui.FileAppStatus
	}{
		"applied": {in: daemon.AppStatus{App: "web", Result: reconcile.ResultOK, Findings: 2, Overlaps: 1, LastRun: at},
			want: ui.FileAppStatus{Ready: "True", Message: "last reconcile: ok", Drift: 2, Overlaps: 1, LastSync: &at}},
		"conflicts": {in: daemon.AppStatus{App: "web", Result: reconcile.ResultConflicts, Conflicts: 3, LastRun: at},
			want: ui.FileAppStatus{Ready: "False", Message: "last reconcile: conflicts", Conflicts: 3, LastSync: &at}},
		"failed": {in: daemon.AppStatus{App: "web", Result: reconcile.ResultFailed, Error: "render: kustomize build failed"},
			want: ui.FileAppStatus{Ready: "False", Message: "last reconcile: failed: render: kustomize build failed"}},
		"not reconciled yet": {in: daemon.AppStatus{App: "web", Result: daemon.ResultPending},
			want: ui.FileAppStatus{Ready: "Unknown", Message: "last reconcile: pending"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if diff := cmp.Diff(tc.want, fileAppStatus(tc.in)); diff != "" {
				t.Errorf("fileAppStatus (-want +got):\n%s", diff)
			}
		})
	}
}
