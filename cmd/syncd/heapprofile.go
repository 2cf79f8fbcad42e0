//go:build syncd_heapprofile

package main

import (
	"os"
	"time"

	"syncd.dev/syncd/internal/heapprof"
)

// init, in a binary built with -tags syncd_heapprofile (bench/'s
// BenchmarkApplyConfig builds one; the product binary has no such code),
// writes a heap profile to $SYNCD_HEAP_PROFILE_PEAK each time the live heap
// the last collection marked is the largest so far: what is held at (about)
// the peak of a command. A render child gets no environment but its
// trigger, so it never profiles.
func init() {
	path := os.Getenv("SYNCD_HEAP_PROFILE_PEAK")
	if path == "" {
		return
	}
	go heapprof.Peaks(path, 100*time.Millisecond)
}
