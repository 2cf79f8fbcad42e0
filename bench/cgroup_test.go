package bench

import (
	"bufio"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"golang.org/x/sys/unix"
)

// cgroupMemoryRoot is where cgroup v1's memory controller is mounted.
const cgroupMemoryRoot = "/sys/fs/cgroup/memory"

// memCgroup is a cgroup v1 memory cgroup the benchmark makes for one run
// of syncd when BENCH_CGROUP_LIMIT is set: syncd and its render children
// are charged to it and limited by it as by a container's memory limit,
// and syncd reads its Go memory limit from it (internal/memlimit). It is
// made below the benchmark's own memory cgroup and removed after the run.
type memCgroup struct {
	dir   string
	limit int64
	// dmesgLines is how many lines the kernel log had when the cgroup
	// was made: the out-of-memory reports of the run are the lines after.
	dmesgLines int
}

// cgroupResult is what a memory cgroup recorded of one run.
type cgroupResult struct {
	limit, maxUsage int64
	// failcnt counts the times usage hit the limit (the kernel then
	// reclaimed, or killed); oomKills the processes the cgroup's
	// out-of-memory killer ended.
	failcnt, oomKills int64
	// kernel is the kernel log's out-of-memory lines of the run.
	kernel []string
}

// cgroupLimit is BENCH_CGROUP_LIMIT in bytes ("256M", "256Mi", "1G" or a
// number of bytes), 0 when unset.
func cgroupLimit(b *testing.B) int64 {
	b.Helper()
	v := os.Getenv("BENCH_CGROUP_LIMIT")
	if v == "" {
		return 0
	}
	n, err := parseSize(v)
	if err != nil {
		b.Fatalf("BENCH_CGROUP_LIMIT: %v", err)
	}
	return n
}

// parseSize reads a size in bytes with an optional binary suffix (K, M,
// G, or Ki, Mi, Gi: both are powers of 1024, as cgroup v1 reads them).
func parseSize(s string) (int64, error) {
	units := map[string]int64{"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30}
	num := strings.TrimRight(s, "KMGi")
	unit := strings.TrimSuffix(s[len(num):], "i")
	mult, ok := units[unit]
	n, err := strconv.ParseInt(num, 10, 64)
	if !ok || err != nil || n <= 0 {
		return 0, fmt.Errorf("%q: not a size such as 256M or 268435456", s)
	}
	return n * mult, nil
}

// newMemCgroup makes a memory cgroup limited to BENCH_CGROUP_LIMIT for
// the run called name, or returns nil when BENCH_CGROUP_LIMIT is unset.
// It is removed when the benchmark ends.
func newMemCgroup(b *testing.B, name string) *memCgroup {
	b.Helper()
	limit := cgroupLimit(b)
	if limit == 0 {
		return nil
	}
	own, err := ownMemoryCgroup()
	if err != nil {
		b.Fatal(err)
	}
	c := &memCgroup{dir: filepath.Join(cgroupMemoryRoot, own, fmt.Sprintf("syncd-bench-%d-%s", os.Getpid(), name)), limit: limit, dmesgLines: len(kernelLog())}
	if err := os.Mkdir(c.dir, 0o755); err != nil {
		b.Fatalf("memory cgroup (cgroup v1, as root): %v", err)
	}
	b.Cleanup(func() {
		if err := c.remove(); err != nil {
			b.Error(err)
		}
	})
	if err := os.WriteFile(filepath.Join(c.dir, "memory.limit_in_bytes"), []byte(strconv.FormatInt(limit, 10)), 0o644); err != nil {
		b.Fatalf("%s: set the limit: %v", c.dir, err)
	}
	return c
}

// ownMemoryCgroup is this process's cgroup v1 memory cgroup, relative to
// the controller's mount.
func ownMemoryCgroup() (string, error) {
	f, err := os.ReadFile("/proc/self/cgroup")
	if err != nil {
		return "", err
	}
	for _, line := range strings.Split(string(f), "\n") {
		parts := strings.SplitN(line, ":", 3)
		if len(parts) == 3 && parts[1] == "memory" {
			return parts[2], nil
		}
	}
	return "", errors.New("/proc/self/cgroup: no cgroup v1 memory controller; BENCH_CGROUP_LIMIT needs one")
}

// wrap makes cmd join the cgroup before it runs: a shell writes its own
// process id to cgroup.procs and execs the command, so the command (same
// process id) and every child it starts are charged to the cgroup from
// their first page. The binary's pages are dropped from the page cache
// first, so that they are read, and charged, inside the cgroup as in a
// fresh container rather than to whoever read them before.
func (c *memCgroup) wrap(b *testing.B, cmd *exec.Cmd) {
	b.Helper()
	if err := evictPageCache(cmd.Path); err != nil {
		b.Fatal(err)
	}
	script := fmt.Sprintf(`echo $$ > %s && exec "$0" "$@"`, filepath.Join(c.dir, "cgroup.procs"))
	args := append([]string{"sh", "-c", script}, cmd.Args...)
	args[3] = cmd.Path
	cmd.Path, cmd.Args = "/bin/sh", args
}

// evictPageCache drops the page-cache pages of the file at path, written
// out first (a binary just built is dirty in the cache, and dirty pages
// are not dropped).
func evictPageCache(path string) error {
	f, err := os.Open(path)
	if err != nil {
		return err
	}
	defer f.Close()
	if err := f.Sync(); err != nil {
		return fmt.Errorf("%s: write out: %w", path, err)
	}
	if err := unix.Fadvise(int(f.Fd()), 0, 0, unix.FADV_DONTNEED); err != nil {
		return fmt.Errorf("%s: drop from the page cache: %w", path, err)
	}
	return nil
}

// workingSetKiB is the cgroup's working set in KiB: its usage less its
// inactive file pages, what the kubelet reports and evicts on.
func (c *memCgroup) workingSetKiB() int64 {
	usage, err := c.read("memory.usage_in_bytes")
	if err != nil {
		return 0
	}
	inactive := c.stat()["total_inactive_file"]
	return max(0, usage-inactive) / 1024
}

// result reads what the cgroup recorded of the run.
func (c *memCgroup) result() (cgroupResult, error) {
	r := cgroupResult{limit: c.limit}
	var errs []error
	var err error
	r.maxUsage, err = c.read("memory.max_usage_in_bytes")
	errs = append(errs, err)
	r.failcnt, err = c.read("memory.failcnt")
	errs = append(errs, err)
	r.oomKills = c.keyed("memory.oom_control")["oom_kill"]
	if lines := kernelLog(); len(lines) > c.dmesgLines {
		for _, l := range lines[c.dmesgLines:] {
			if strings.Contains(l, "oom") || strings.Contains(l, "Killed process") || strings.Contains(l, "Memory cgroup") {
				r.kernel = append(r.kernel, l)
			}
		}
	}
	return r, errors.Join(errs...)
}

// read returns the number in one of the cgroup's files.
func (c *memCgroup) read(file string) (int64, error) {
	b, err := os.ReadFile(filepath.Join(c.dir, file))
	if err != nil {
		return 0, err
	}
	return strconv.ParseInt(strings.TrimSpace(string(b)), 10, 64)
}

// stat is the cgroup's memory.stat.
func (c *memCgroup) stat() map[string]int64 { return c.keyed("memory.stat") }

// keyed reads one of the cgroup's "key value" files.
func (c *memCgroup) keyed(file string) map[string]int64 {
	out := map[string]int64{}
	f, err := os.Open(filepath.Join(c.dir, file))
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		var k string
		var v int64
		if _, err := fmt.Sscanf(sc.Text(), "%s %d", &k, &v); err == nil {
			out[k] = v
		}
	}
	return out
}

// remove removes the cgroup once the processes it held are gone (a
// killed process may take a moment to leave it).
func (c *memCgroup) remove() error {
	deadline := time.Now().Add(10 * time.Second)
	for {
		err := os.Remove(c.dir)
		if err == nil || errors.Is(err, os.ErrNotExist) {
			return nil
		}
		if time.Now().After(deadline) {
			procs, _ := os.ReadFile(filepath.Join(c.dir, "cgroup.procs"))
			return fmt.Errorf("%s: remove the memory cgroup: %w (processes left: %q)", c.dir, err, procs)
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// kernelLog is the kernel's log, one line per entry (none when it cannot
// be read).
func kernelLog() []string {
	out, err := exec.Command("dmesg").Output()
	if err != nil {
		return nil
	}
	return strings.Split(strings.TrimRight(string(out), "\n"), "\n")
}

// String is the result as the tables show it.
func (r cgroupResult) String() string {
	s := fmt.Sprintf("limit %.0f MiB: max usage %.0f MiB, limit hit %d times, %d OOM kills", mib(r.limit/1024), mib(r.maxUsage/1024), r.failcnt, r.oomKills)
	return s
}

// describe says what the cgroup's out-of-memory killer ended in the run
// m, naming syncd (pid) or its render child; empty when nothing was.
func (r cgroupResult) describe(pid int, m measured) string {
	if r.oomKills == 0 && len(r.kernel) == 0 {
		return ""
	}
	var sb strings.Builder
	fmt.Fprintf(&sb, "%d OOM kills in the cgroup; syncd (pid %d) ended with %v; render children seen: %v\n", r.oomKills, pid, m.state, keys(m.children))
	for _, l := range r.kernel {
		sb.WriteString("  kernel: " + l + "\n")
	}
	return sb.String()
}

func keys(m map[int]bool) []int {
	out := make([]int, 0, len(m))
	for k := range m {
		out = append(out, k)
	}
	return out
}
