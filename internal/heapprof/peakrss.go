package heapprof

import (
	"errors"
	"os"
	"strconv"
	"strings"
)

// PeakRSS is this process's peak resident set in KiB: VmHWM, the peak of
// its own memory. Not getrusage's maxrss: Linux records there the peak of
// the memory a process left at exec, and Go starts commands with
// CLONE_VM, so it is never below the peak of the process that started
// this one (a benchmark, or the go command).
func PeakRSS() (int64, error) {
	status, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0, err
	}
	for _, line := range strings.Split(string(status), "\n") {
		if v, ok := strings.CutPrefix(line, "VmHWM:"); ok {
			return strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(v), " kB"), 10, 64)
		}
	}
	return 0, errors.New("/proc/self/status has no VmHWM line")
}
