package controller

import (
	"context"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/source"
)

// fetched is what an App's poll of a HelmSource or an OCISource fetched:
// the source's status.revision and status.artifactDigest.
type fetched struct {
	Revision, Digest string
}

// fetchedOf is what rev, a poll of src, fetched; false for a GitSource
// (its status has no revision) or a revision that names no artifact.
func fetchedOf(src Source, rev source.Revision) (fetched, bool) {
	switch {
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

// withAlgorithm prefixes a hex sha256 digest with "sha256:".
func withAlgorithm(hex string) string {
	if hex == "" || strings.Contains(hex, ":") {
		return hex
	}
	return "sha256:" + hex
}

// recordFetch writes what an App's poll fetched into its HelmSource's or
// OCISource's status, with an Event, when it differs from what the
// status shows: a poll that found the same artifact writes nothing.
// src is the source as the App's reconcile read it from the informer.
func (c *Controller) recordFetch(ctx context.Context, src Source, rev source.Revision) {
	f, ok := fetchedOf(src, rev)
	st := src.artifactStatus()
	if !ok || st == nil || (st.Revision == f.Revision && st.ArtifactDigest == f.Digest) {
		return
	}
	now := metav1.NewTime(c.opts.Clock.Now())
	err := c.writeSourceStatus(ctx, src, map[string]any{"revision": f.Revision, "artifactDigest": f.Digest, "lastFetchTime": now})
	if err != nil {
		c.log.Warn("the fetched revision was not written to the source's status", "source", src.String(), "error", err)
		return
	}
	c.events.sourceFetched(src, f)
}
