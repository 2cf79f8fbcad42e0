// Package source polls Git repositories and checks out the revision each
// configured ref resolves to: the first stage of syncd's pipeline. It
// returns a Revision (commit SHA, tag, commit metadata and the directory of
// the checked-out tree) that the planner reads manifests from.
//
// A Source resolves a branch, a tag, the highest tag in a semver range, or a
// pinned commit with one ref listing (ls-remote). When the ref has not moved
// a poll ends there: one info/refs request over smart HTTP, no fetch. When
// it has moved, only missing objects are fetched into a bare repository kept
// per source under the cache directory (depth 1 for the first fetch; whole
// history only for a pinned commit that is not the tip of a branch or tag),
// signatures are verified when configured, and the tree is written to
// <cache>/<source>/trees/<sha>, keeping file modes and symlinks. Older
// trees are deleted once no reader holds them (Source.Hold): a reader
// walking a tree never loses files to a newer revision.
//
// A Source whose Spec sets OCI follows an OCI artifact instead
// (oci://host/repository; a tag, the highest tag in a semver range, or a
// pinned manifest digest), read with go-containerregistry. A poll whose
// tag did not move is one manifest HEAD request (the connection, and any
// token it was given, are kept between polls while the credentials stay
// the same); a digest pin in force asks nothing. A new digest fetches the
// manifest, takes its one tar+gzip content layer (flux push artifact's
// media type, a generic OCI or Docker layer, or a Helm chart's, whose
// chart directory is stripped) and extracts it, its digest checked as it
// is read, into <cache>/<source>/trees/<digest hex>: regular files,
// directories and symlinks that resolve inside it only, within
// DefaultExtractLimits. Anything else refuses the artifact whole
// (KindArtifactRefused). Credentials come from a Docker config file
// (credential helpers are never run), a password file or a token file;
// plain HTTP goes only to loopback unless OCI.Insecure is set.
//
// A HelmRepo (HelmRepos.Add) follows a Helm chart repository over
// HTTP(S): the charts its apps name (HelmSpec.Charts, an exact version or
// a semver range each). A poll is one conditional GET of index.yaml
// (If-None-Match / If-Modified-Since); a 304, or an index that resolves
// every chart to the version and digest in force, ends it with Unchanged.
// Otherwise only the archives not cached under <cache>/<source>/charts
// (named by the digest index.yaml gives, which a download must match) are
// downloaded, and each chart is expanded with Helm's expander into
// <cache>/<source>/trees/<revision>/<n>/<chart> (Revision.Helm says
// where). A dependency that is not vendored is fetched through the
// HelmRepo of the same set whose URL is its repository, never from
// anywhere else. Basic auth or a bearer token (from files) and the CA
// file go only to the repository's own scheme, host and port. A HelmRepo
// at an oci:// URL (oci_helm.go) reads charts that helm push stored below
// that registry prefix instead: a chart's versions are the semver tags of
// <prefix>/<chart>, a poll is one tag listing and one manifest HEAD per
// chart, and a chart layer is extracted with the OCI sources' rules; its
// remote dependencies are never fetched.
//
// A Scheduler runs polls on an interval (plus jitter) or a cron schedule,
// never two at once for one source, and on demand (Trigger). The first
// polls are spaced evenly over at most 30s so sources do not start in
// lockstep. A failed poll
// is retried sooner, with exponential backoff per source (wait.Backoff: 5s
// doubling, capped at 5m, each delay plus up to 10% jitter, and never later
// than the source's regular poll), reset by a success.
//
// Guarantees:
//   - A failed poll returns an *Error with a Kind, and changes nothing: the
//     last good Revision stays in force (Last) and its directory stays on
//     disk, so nothing downstream is pruned because a source failed.
//   - Credentials are read from files on every poll and never appear in
//     errors or in Revision.URL. SSH host keys are always checked against
//     the configured known_hosts file.
//   - With verification on, a revision that is unsigned or not signed by a
//     key in the keys file never becomes the one in force. In mode tag the
//     signed tag object must carry the name of the tag resolved (no
//     replay of an older signed tag under a newer name). On a branch a new
//     head must descend from the last verified head unless
//     git.verify.allowRewrites is set; to show that, a cache rebuilt while
//     a revision is in force is cloned with whole history.
//   - Revision.AppDir refuses paths that leave the tree (through ".." or a
//     symlink).
//
// Not guaranteed:
//   - A tree directory stays on disk only while its revision is in force or
//     a reader holds it (Source.Hold, released when done): a reader that
//     does not hold it may find files gone after the next poll. Files that
//     did not change between two revisions are hard links shared by both
//     trees: trees must be treated as read-only.
//   - The last verified head of a branch lives in memory: after a restart
//     the first head is accepted on its signature alone.
//   - Force-push detection is exact while the cache holds the previous
//     revision; after the cache was rebuilt (corruption, or a restart) the
//     first new revision is reported as Updated, not Rewritten.
//   - Submodules are not fetched (their paths are empty directories), and
//     Git LFS pointers are checked out as the pointer files.
//   - Tree directories are not protected against being modified by other
//     processes (a modified file would be linked into the next tree).
//   - Trigger polls at once even while a source backs off: callers that
//     trigger (webhooks) decide how often a failing server is asked.
//   - OCI artifacts have no history: Descends takes every new digest as
//     descending from the last (a tag moved back is not a rewind), and a
//     poll that moved reports Updated, never Rewritten.
//   - oci.caFile is read when the connection is set up (the first poll,
//     and whenever the credentials change), not on every poll.
//   - Helm repositories have no history either (Descends always says
//     descends), their index validators live in memory (a restart reads
//     index.yaml in full; archives come from the cache), and a chart's
//     dependencies are resolved only when the chart's revision moves.
//   - The package does not log; callers report Results and Errors.
package source
