package renderproc

import (
	"bytes"
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pageSize is the size of a memory page, the unit of /proc/PID/statm.
var pageSize = int64(os.Getpagesize())

// memoryOf returns the memory process pid owns, in bytes: its resident
// set less the pages it shares with files (/proc/PID/statm's resident
// minus shared: RssAnon). The binary's own pages, which every syncd
// process shares through the page cache (about 100 MiB of a child's
// resident set), are not a render's.
func memoryOf(pid int) (int64, error) {
	file := fmt.Sprintf("/proc/%d/statm", pid)
	resident, err := statmField(file, 1)
	if err != nil {
		return 0, err
	}
	shared, err := statmField(file, 2)
	if err != nil {
		return 0, err
	}
	return resident - shared, nil
}

// addressSpace returns this process's virtual memory size in bytes (the
// first field of /proc/self/statm).
func addressSpace() (int64, error) {
	return statmField("/proc/self/statm", 0)
}

// statmField reads field i of a statm file, in bytes.
func statmField(file string, i int) (int64, error) {
	data, err := os.ReadFile(file)
	if err != nil {
		return 0, err
	}
	fields := strings.Fields(string(bytes.TrimSpace(data)))
	if len(fields) <= i {
		return 0, fmt.Errorf("%s: %d fields, want more than %d", file, len(fields), i)
	}
	pages, err := strconv.ParseInt(fields[i], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%s: %w", file, err)
	}
	return pages * pageSize, nil
}
