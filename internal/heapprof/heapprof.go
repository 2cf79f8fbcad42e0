// Package heapprof writes heap profiles of the live heap at its peak,
// for the benchmarks' memory figures (bench/cmd/rss and a syncd binary
// built with -tags syncd_heapprofile).
package heapprof

import (
	"os"
	"runtime/metrics"
	"runtime/pprof"
	"time"
)

// Peaks checks the live heap the last garbage collection marked every
// interval, for ever, and writes a heap profile to path each time it is
// the largest so far: what is held at (about) the peak. Run it in a
// goroutine.
func Peaks(path string, every time.Duration) {
	sample := []metrics.Sample{{Name: "/gc/heap/live:bytes"}}
	var peak uint64
	for range time.Tick(every) {
		metrics.Read(sample)
		if live := sample[0].Value.Uint64(); live > peak {
			peak = live
			_ = Write(path)
		}
	}
}

// Write writes the heap profile to path, through a temporary file so
// that a process that exits mid-write leaves the last whole one.
func Write(path string) error {
	f, err := os.Create(path + ".tmp")
	if err != nil {
		return err
	}
	err = pprof.WriteHeapProfile(f)
	if cerr := f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		return err
	}
	return os.Rename(path+".tmp", path)
}
