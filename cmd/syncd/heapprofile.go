//go:build syncd_heapprofile

package main

import (
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
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
	go profileHeapPeaks(path)
}

// profileHeapPeaks samples the live heap every 100ms and writes a heap
// profile to path whenever it is the largest so far.
func profileHeapPeaks(path string) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	for range time.Tick(100 * time.Millisecond) {
		metrics.Read(sample)
		if live := sample[0].Value.Uint64(); live > peak {
			peak = live
			writeHeapProfile(path)
		}
	}
}

// writeHeapProfile writes the heap profile to path, through a temporary
// file so that a process that exits mid-write leaves the last whole one.
func writeHeapProfile(path string) {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return
	}
	err = pprof.WriteHeapProfile(f)
	if cerr := f.Close(); err == nil && cerr == nil {
		_ = os.Rename(path+".tmp", path)
	}
}
