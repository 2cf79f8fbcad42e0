package memlimit

import (
	"os"
	"runtime/debug"
)

// DaemonGCPercent is the collector target syncd run sets (what GOGC
// sets): the heap may grow to 1.5 times what the last collection left
// live, not the runtime's default of twice. The daemon's peaks are its
// reconciles of large apps, when the render and the plan (tens of MB at
// 10,000 objects) are live beside the resident live caches; at 100 the
// heap grows by as much again before it is collected. Collecting twice as
// often costs about 1 % more of one core while syncd reconciles
// (docs/performance.md) and nothing while it is idle.
const DaemonGCPercent = 50

// GCEnvVar is the environment variable that sets the collector target by
// hand; when it is set, SetGCPercent leaves the target as the runtime
// read it.
const GCEnvVar = "GOGC"

// GCSource says where the collector target in force came from.
type GCSource string

// Sources of the collector target.
const (
	// GCSourceEnv is a GOGC set in the environment, left as it is.
	GCSourceEnv GCSource = "GOGC"
	// GCSourceDaemon is DaemonGCPercent, set by syncd run.
	GCSourceDaemon GCSource = "syncd run"
)

// GCResult is the collector target in force and where it came from.
type GCResult struct {
	// Percent is the target (debug.SetGCPercent); negative: the
	// collector is off (GOGC=off), with only a memory limit to make it
	// run.
	Percent int
	Source  GCSource
}

// SetGCPercent sets the collector target to percent unless GOGC is set
// in the environment, which wins, and returns the target in force.
func SetGCPercent(percent int) GCResult {
	if os.Getenv(GCEnvVar) != "" {
		return GCResult{Percent: currentGCPercent(), Source: GCSourceEnv}
	}
	debug.SetGCPercent(percent)
	return GCResult{Percent: percent, Source: GCSourceDaemon}
}

// currentGCPercent is the collector target in force (SetGCPercent
// returns the previous one; it is set back at once).
func currentGCPercent() int {
	p := debug.SetGCPercent(100)
	debug.SetGCPercent(p)
	return p
}
