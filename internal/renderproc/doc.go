// Package renderproc runs a render (planner.Render: one app's Helm chart,
// kustomization or directory of manifests → its objects) in a child
// process of syncd, so that a render that exhausts memory or never ends
// fails only its app and cannot take the daemon down.
//
// The child is the same binary re-executed (os.Executable) with
// SYNCD_RENDER_CHILD set: Main, called first thing in syncd's main and
// in the TestMain of every test binary that renders, turns such a
// process into a render child. The child reads one request (the tree's
// paths, the Helm options, the app's SOPS keys) from stdin, renders
// offline with the process-wide network block (egress.Forbid) installed,
// writes its answer as JSON to a pipe of its own (file descriptor 3:
// whatever a library prints to stdout cannot corrupt it) and exits. The
// answer streams: the child encodes and writes one manifest at a time,
// dropping each once written, and the parent decodes each as it arrives,
// so neither holds the answer's bytes beside the objects (a render of
// 10,000 objects is several MB of JSON).
// Errors cross as structured JSON: a planner.ManifestErrors comes back as
// one, each problem with its file, document, item, object and message,
// so a user reads what an in-process render would have said.
//
// Limits (Limits, per Renderer):
//   - Memory: the parent samples the memory the child owns (its resident
//     set less pages shared with files, such as the binary's own: RssAnon,
//     from /proc/PID/statm) every few milliseconds and kills it above the
//     limit; the child also
//     caps its address space (RLIMIT_AS) at what it had reserved when it
//     started plus the limit and some slack, so one huge allocation fails
//     at once instead of between two samples, and sets its Go memory
//     limit (GOMEMLIMIT) below the limit so the collector works hard
//     before either stops it. The child makes itself the kernel's first
//     choice of an out-of-memory kill (oom_score_adj 1000), so a container
//     memory limit reached by a render kills the render, not syncd.
//   - Time: the child is killed (SIGKILL, its whole process group) at the
//     deadline, and its CPU time is capped (RLIMIT_CPU) at the same
//     length as a backstop should syncd die without killing it.
//   - Output: an answer larger than the limit is not read further and the
//     child is killed.
//   - Concurrency: at most this many children run at once per Renderer;
//     waiting for a turn does not count against the time limit.
//
// A render that hits a limit returns a *LimitError naming the limit, the
// value, and the flag that raises it. The child gets no environment but
// its trigger (no credentials, no proxy settings, no KUBECONFIG), and
// stdin, its answer pipe and stderr as its only open files.
//
// Not guaranteed: the child runs as syncd's user with syncd's file system
// view; the render itself confines reads to the app's repository (see
// package planner), the child's process boundary does not. Network access
// is refused by the default transport's block, not by a network
// namespace. Sampling can overshoot the memory limit by what a render
// allocates between two samples (RLIMIT_AS bounds that overshoot). The
// child is killed with syncd through PR_SET_PDEATHSIG, which Linux ties to
// the thread that started it; should that thread end first, the child is
// killed early and its render fails (and is retried), never left running.
package renderproc
