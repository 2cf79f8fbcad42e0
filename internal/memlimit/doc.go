// Package memlimit sets syncd's Go memory limit (runtime/debug's
// SetMemoryLimit, what GOMEMLIMIT sets) from the memory limit of the
// container it runs in: 90 % of the cgroup's limit, or the limit less
// 80 MiB for the binary's own pages when that is less (a small
// container: 176 MiB of 256 MiB), not below half the limit (cgroup v2
// memory.max, or v1 memory.limit_in_bytes, the nearest limited ancestor
// included), read with github.com/KimMachineGun/automemlimit. Near the
// limit the garbage collector then runs more often instead of letting the
// heap grow to twice its live size, so a burst (a first sync of many
// objects) is paid for in CPU rather than in an out-of-memory kill.
//
// A GOMEMLIMIT in the environment wins and is left as it is. Without a
// container limit no Go limit is set (the runtime's default, none).
//
// SetGCPercent sets the collector's target for the daemon
// (DaemonGCPercent, 50: the heap grows to 1.5 times what the last
// collection left live, not twice); a GOGC in the environment wins.
//
// Not guaranteed: the Go limit is soft. It bounds what the Go runtime
// holds (heap, stacks, its own metadata), not the pages of the binary
// itself or memory outside the runtime; a live heap larger than the limit
// is still allocated (the collector then runs continuously), and the
// container's limit still ends the process. Renders run in child
// processes (internal/renderproc) that set limits of their own and are
// charged to the same container.
package memlimit
