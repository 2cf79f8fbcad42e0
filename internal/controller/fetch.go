package controller

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/source"
)

// fetched is what an App's poll of a source fetched: the source's
// status.revision and (HelmSource, OCISource) status.artifactDigest.
type fetched struct {
	Revision, Digest string
}

// fetchedOf is what rev, a poll of src, fetched; false for a revision
// that names no commit or artifact. A commit has no digest beside its
// hash.
func fetchedOf(src Source, rev source.Revision) (fetched, bool) {
	switch {
	case src.Git != nil && rev.SHA != "":
		return fetched{Revision: gitRevision(src.Git.Spec.GitRef, rev)}, true
	case src.OCI != nil && rev.SHA != "":
		f := fetched{Revision: rev.SHA, Digest: rev.SHA}
		if rev.Tag != "" {
			f.Revision = rev.Tag + "@" + rev.SHA
		}
		return f, true
	case src.Helm != nil && rev.Helm != nil && len(rev.Helm.Charts) > 0:
		ch := rev.Helm.Charts[0]
		return fetched{Revision: ch.Ref.Chart + "-" + ch.Version, Digest: withAlgorithm(ch.Digest)}, true
	}
	return fetched{}, false
}

// gitRevision names a fetched commit as Flux does: the branch or tag
// that led to it, then the hash (main@sha1:0123...); a pinned commit is
// its hash.
func gitRevision(ref config.GitRef, rev source.Revision) string {
	hash := "sha1:" + rev.SHA
	if len(rev.SHA) == 64 {
		hash = "sha256:" + rev.SHA
	}
	switch {
	case rev.Tag != "":
		return rev.Tag + "@" + hash
	case ref.Branch != "":
		return ref.Branch + "@" + hash
	}
	return hash
}

// withAlgorithm prefixes a hex sha256 digest with "sha256:".
func withAlgorithm(hex string) string {
	if hex == "" || strings.Contains(hex, ":") {
		return hex
	}
	return "sha256:" + hex
}

// recordFetch writes what an App's poll fetched into its source's
// status, with an Event, when it differs from what the
// status shows: a poll that found the same artifact writes nothing.
// src is the source as the App's reconcile read it from the informer.
func (c *Controller) recordFetch(ctx context.Context, src Source, rev source.Revision) {
	f, ok := fetchedOf(src, rev)
	if !ok || src.lastFetched() == f {
		return
	}
	status := map[string]any{"revision": f.Revision, "lastFetchTime": metav1.NewTime(c.opts.Clock.Now())}
	if src.Git == nil {
		status["artifactDigest"] = f.Digest
	}
	err := c.writeSourceStatus(ctx, src, status)
	if err != nil {
		c.log.Warn("the fetched revision was not written to the source's status", "source", src.String(), "error", err)
		return
	}
	c.events.sourceFetched(src, f)
}
