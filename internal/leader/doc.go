// Package leader runs work while this replica holds a
// coordination.k8s.io Lease, and orders the handoff so that two replicas
// of syncd do not write at once. The election is client-go's
// tools/leaderelection (LeaseLock, ReleaseOnCancel); this package adds
// what happens around it:
//
//   - Release only after the work stopped. When the caller's context ends
//     (SIGTERM), the work's context ends (nothing new starts; what is in
//     flight finishes) and the Lease is released once the work returned,
//     at most Options.ShutdownGrace later. Work that outlives the grace
//     period keeps the Lease renewed until the process exits: the next
//     leader starts when the Lease expires, after this process is gone.
//   - A Lease lost (not renewed within Options.RenewDeadline) ends the
//     work's context the same way, waits for it only as long as no other
//     replica can have acquired the Lease yet (LeaseDuration −
//     RenewDeadline − RetryPeriod, at most ShutdownGrace), and returns
//     ErrLeaseLost: the caller exits, and a restart is a clean candidate
//     (controller-runtime does the same).
//   - A replica that wins the Lease but whose work returns on its own
//     (it cannot run) releases the Lease for another replica, reports
//     Withdrawn in Status, and becomes a candidate again once
//     Options.Runnable says it can run, a lease duration later at the
//     earliest.
//   - Shard layouts exclude each other (layout.go): the Lease of shard K
//     of N is NAME-shard-K-of-N, and a new leader waits, holding its
//     Lease, while a Lease of another layout of the same base name that
//     was acquired before its own is still renewed.
//
// Status is the replica's Phase for a readiness endpoint: a standby is
// ready to take over, a replica that gave up a Lease it could not use is
// not. What happens is reported as typed Events (Options.OnEvent) for the
// caller to log; the package does not log.
//
// Not guaranteed: fencing. Like client-go's leaderelection, on which it
// stands, this package cannot stop a replica whose clock runs slow, whose
// process is paused, or whose requests are delayed in flight from writing
// after another replica took the Lease; it only makes the handoff wait
// for the work it can see. Times in Leases are the holders' own clocks,
// so skew between nodes shifts a handoff by that much. The Lease names
// of an abandoned shard layout are not deleted: they expire.
package leader
