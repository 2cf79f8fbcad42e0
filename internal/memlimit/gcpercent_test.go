package memlimit

import (
	"runtime/debug"
	"testing"
)

// TestSetGCPercent: without GOGC the target is set; with GOGC the
// runtime's target (what it read from GOGC) is left and reported.
func TestSetGCPercent(t *testing.T) {
	defer debug.SetGCPercent(debug.SetGCPercent(100))

	t.Setenv(GCEnvVar, "")
	debug.SetGCPercent(100)
	got := SetGCPercent(DaemonGCPercent)
	if want := (GCResult{Percent: DaemonGCPercent, Source: GCSourceDaemon}); got != want {
		t.Errorf("without GOGC: %+v, want %+v", got, want)
	}
	if p := currentGCPercent(); p != DaemonGCPercent {
		t.Errorf("without GOGC the runtime's target is %d, want %d", p, DaemonGCPercent)
	}

	t.Setenv(GCEnvVar, "80")
	debug.SetGCPercent(80) // as the runtime read it at start
	got = SetGCPercent(DaemonGCPercent)
	if want := (GCResult{Percent: 80, Source: GCSourceEnv}); got != want {
		t.Errorf("with GOGC=80: %+v, want %+v", got, want)
	}
	if p := currentGCPercent(); p != 80 {
		t.Errorf("with GOGC=80 the runtime's target is %d, want it left at 80", p)
	}
}
