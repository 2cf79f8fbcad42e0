package source

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Layer media types an OCI source extracts.
const (
	// MediaTypeFluxContent is the layer flux push artifact writes.
	MediaTypeFluxContent types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	// MediaTypeHelmChart is the layer helm push writes; its files sit
	// below one directory named after the chart, which is stripped.
	MediaTypeHelmChart types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// contentLayerTypes are the layer media types taken as the artifact's
// content, and whether their first path component is stripped.
var contentLayerTypes = map[types.MediaType]bool{
	MediaTypeFluxContent: false,
	types.OCILayer:       false,
	types.DockerLayer:    false,
	MediaTypeHelmChart:   true,
}

// ociTarget is what the configured tag, range or digest resolves to.
type ociTarget struct {
	digest v1.Hash
	tag    string
}

// errorMaker makes the *Error of one source.
type errorMaker func(kind Kind, op string, err error, hint string) *Error

// ociPull is one poll's registry client: the puller, the credentials to
// scrub from its errors, and the source's errors. Sources of OCI
// artifacts and OCI Helm repositories both pull through it.
type ociPull struct {
	p     *remote.Puller
	creds ociCredentials
	fail  errorMaker
}

// pollOCI is Poll for an OCI source, after beginPoll. A tag or
// digest that did not move costs one HEAD request and no download (a
// semver range one tag listing more; a digest pin in force none).
func (s *Source) pollOCI(ctx context.Context, st pollStart) (Revision, Result, error) {
	prev, hasPrev, res := st.prev, st.hasPrev, st.res
	creds, err := s.readOCICredentials()
	if err != nil {
		return Revision{}, res, err
	}
	p, err := s.ociPuller(creds)
	if err != nil {
		return Revision{}, res, err
	}
	c := ociPull{p: p, creds: creds, fail: s.newError}
	tgt, err := s.resolveOCI(ctx, c)
	if err != nil {
		return Revision{}, res, err
	}
	if hasPrev && prev.SHA == tgt.digest.String() && prev.Tag == tgt.tag && isDir(prev.Dir) {
		return prev, res, nil
	}
	rev, err := s.pullOCI(ctx, c, tgt)
	if err != nil {
		return Revision{}, res, err
	}
	res.Moved = Updated
	s.putInForce(rev)
	return rev, res, nil
}

// resolveOCI resolves the configured tag (one HEAD request), semver range
// (a tag listing, then a HEAD of the highest matching tag) or digest.
func (s *Source) resolveOCI(ctx context.Context, c ociPull) (ociTarget, error) {
	repo := s.oci.repo
	switch s.kind {
	case refCommit:
		h, _ := v1.NewHash(s.refName)
		return ociTarget{digest: h}, nil
	case refSemver:
		tags, err := c.p.List(ctx, repo)
		if err != nil {
			return ociTarget{}, c.classify("list tags", err)
		}
		tag, ok := highestTag(tags, s.constraint)
		if !ok {
			return ociTarget{}, s.newError(KindRefNotFound, "resolve", fmt.Errorf("no tag of %d matches semver range %q", len(tags), s.refName),
				previousInForce+"; push a matching tag or widen oci.semver")
		}
		return c.headTag(ctx, repo, tag)
	default:
		return c.headTag(ctx, repo, s.refName)
	}
}

// headTag resolves one tag to its manifest digest with a HEAD request.
func (c ociPull) headTag(ctx context.Context, repo name.Repository, tag string) (ociTarget, error) {
	desc, err := c.p.Head(ctx, repo.Tag(tag))
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return ociTarget{}, c.fail(KindRefNotFound, "resolve", fmt.Errorf("tag %q does not exist in the repository", tag),
				previousInForce+"; push the tag or change the configured tag or range")
		}
		return ociTarget{}, c.classify("resolve tag", err)
	}
	return ociTarget{digest: desc.Digest, tag: tag}, nil
}

// highestTag picks the highest tag in range c. Helm writes a version's
// '+' as '_' in tags; both spellings are read.
func highestTag(tags []string, c *semver.Constraints) (string, bool) {
	type cand struct {
		v   *semver.Version
		tag string
	}
	var cands []cand
	for _, t := range tags {
		v, err := semver.NewVersion(strings.ReplaceAll(t, "_", "+"))
		if err != nil || !c.Check(v) {
			continue
		}
		cands = append(cands, cand{v, t})
	}
	if len(cands) == 0 {
		return "", false
	}
	sort.Slice(cands, func(i, j int) bool {
		if d := cands[i].v.Compare(cands[j].v); d != 0 {
			return d > 0
		}
		return cands[i].tag < cands[j].tag
	})
	return cands[0].tag, true
}

// pullOCI fetches the manifest of tgt, picks its content layer, downloads
// and extracts it into trees/<digest hex>. The returned tree carries the
// poll's hold (see checkout).
func (s *Source) pullOCI(ctx context.Context, c ociPull, tgt ociTarget) (Revision, error) {
	m, layer, strip, err := c.content(ctx, s.oci.repo, tgt.digest, nil)
	if err != nil {
		return Revision{}, err
	}
	key := tgt.digest.Hex
	dir := filepath.Join(s.treesDir(), key)
	if !s.holdIfPresent(key) {
		tmp, err := os.MkdirTemp(s.treesDir(), ".tmp-"+key+"-")
		if err != nil {
			return Revision{}, s.newError(KindCache, "extract", err, "check that "+s.treesDir()+" is writable")
		}
		if err := c.extract(ctx, s.oci.repo, layer, strip, tmp); err != nil {
			_ = os.RemoveAll(tmp)
			return Revision{}, err
		}
		if err := s.placeTree(tmp, dir); err != nil {
			return Revision{}, err
		}
	}
	return s.ociRevision(tgt, m, dir), nil
}

// content fetches the manifest at digest (checked against it) and returns
// it with its one content layer, and whether that layer's first path
// component is stripped. only, when set, is the one layer media type
// taken.
func (c ociPull) content(ctx context.Context, repo name.Repository, digest v1.Hash, only *types.MediaType) (*v1.Manifest, v1.Descriptor, bool, error) {
	desc, err := c.p.Get(ctx, repo.Digest(digest.String()))
	if err != nil {
		if isStatus(err, http.StatusNotFound) {
			return nil, v1.Descriptor{}, false, c.fail(KindRefNotFound, "fetch manifest", fmt.Errorf("manifest %s does not exist in the repository", digest), "check the configured digest")
		}
		return nil, v1.Descriptor{}, false, c.classify("fetch manifest", err)
	}
	return contentLayer(desc, only, c.fail)
}

// contentLayer checks that desc is an image manifest and returns it with
// its one content layer (and whether that layer's first path component is
// stripped).
func contentLayer(desc *remote.Descriptor, only *types.MediaType, fail errorMaker) (*v1.Manifest, v1.Descriptor, bool, error) {
	bad := func(format string, args ...any) (*v1.Manifest, v1.Descriptor, bool, error) {
		return nil, v1.Descriptor{}, false, fail(KindArtifactRefused, "read manifest", fmt.Errorf(format, args...),
			"push the artifact with flux push artifact or helm push (one tar+gzip layer)")
	}
	if desc.MediaType != types.OCIManifestSchema1 && desc.MediaType != types.DockerManifestSchema2 {
		return bad("manifest %s has media type %q; an image manifest is needed (an image index names several artifacts)", desc.Digest, desc.MediaType)
	}
	m, err := v1.ParseManifest(bytes.NewReader(desc.Manifest))
	if err != nil {
		return bad("manifest %s cannot be parsed: %v", desc.Digest, err)
	}
	var found []v1.Descriptor
	var seen []string
	for _, l := range m.Layers {
		seen = append(seen, string(l.MediaType))
		if _, ok := contentLayerTypes[l.MediaType]; ok && (only == nil || l.MediaType == *only) {
			found = append(found, l)
		}
	}
	switch len(found) {
	case 1:
		return m, found[0], contentLayerTypes[found[0].MediaType], nil
	case 0:
		if only != nil {
			return bad("manifest %s has no layer of media type %s (layers: %s)", desc.Digest, *only, strings.Join(seen, ", "))
		}
		return bad("manifest %s has no tar+gzip content layer (layers: %s)", desc.Digest, strings.Join(seen, ", "))
	default:
		return bad("manifest %s has %d tar+gzip content layers; syncd reads artifacts of exactly one", desc.Digest, len(found))
	}
}

// extract downloads the layer (its digest checked as it is read) and
// extracts it into dir, an empty directory the caller removes on error.
func (c ociPull) extract(ctx context.Context, repo name.Repository, layer v1.Descriptor, strip bool, dir string) error {
	lim := DefaultExtractLimits
	if layer.Size > lim.Compressed {
		return c.fail(KindArtifactRefused, "download layer", fmt.Errorf("layer %s is %d bytes, over the %d-byte limit of a compressed artifact", layer.Digest, layer.Size, lim.Compressed), "make the artifact smaller")
	}
	l, err := c.p.Layer(ctx, repo.Digest(layer.Digest.String()))
	if err != nil {
		return c.classify("download layer", err)
	}
	rc, err := l.Compressed()
	if err != nil {
		return c.classify("download layer", err)
	}
	defer rc.Close()
	if err := extractTarGz(rc, dir, ExtractOptions{Limits: lim, StripFirst: strip}); err != nil {
		var ae *ArchiveError
		if errors.As(err, &ae) {
			return c.fail(KindArtifactRefused, "extract", err, "nothing of it is written; push an artifact without such entries")
		}
		return c.classify("download layer", err)
	}
	return nil
}

// placeTree renames a complete temporary tree into place and takes the
// poll's hold on it.
func (s *Source) placeTree(tmp, dir string) error {
	if err := os.Chmod(tmp, 0o755); err != nil {
		_ = os.RemoveAll(tmp)
		return s.newError(KindCache, "extract", err, "")
	}
	s.mu.Lock()
	err := os.Rename(tmp, dir)
	if err == nil {
		s.pinLocked(filepath.Base(dir))
	}
	s.mu.Unlock()
	if err != nil {
		_ = os.RemoveAll(tmp)
		return s.newError(KindCache, "extract", err, "")
	}
	return nil
}

// ociRevision is the revision of an artifact extracted into dir. The
// artifact's annotations (as flux push artifact writes them) give its
// time and where it was built from.
func (s *Source) ociRevision(tgt ociTarget, m *v1.Manifest, dir string) Revision {
	rev := Revision{Source: s.name, URL: s.displayURL, Ref: s.ociRefString(), SHA: tgt.digest.String(), Tag: tgt.tag, Dir: dir}
	if t, err := time.Parse(time.RFC3339, m.Annotations["org.opencontainers.image.created"]); err == nil {
		rev.CommitTime = t
	}
	if src, r := m.Annotations["org.opencontainers.image.source"], m.Annotations["org.opencontainers.image.revision"]; src != "" || r != "" {
		rev.Subject = strings.TrimSpace(src + " " + r)
	}
	return rev
}

// classify turns a registry error into an *Error, its message scrubbed
// of the credentials.
func (c ociPull) classify(op string, err error) *Error {
	err = scrub(err, c.creds.secrets...)
	var te *transport.Error
	switch {
	case errors.Is(err, errPlainHTTP):
		return c.fail(KindUnreachable, op, err, "")
	case errors.As(err, &te) && (te.StatusCode == http.StatusUnauthorized || te.StatusCode == http.StatusForbidden):
		return c.fail(KindAuth, op, err, "check the configured credentials and their access to the repository")
	case errors.As(err, &te) && te.StatusCode == http.StatusNotFound:
		return c.fail(KindRepositoryNotFound, op, err, "check the url and that the credentials can see the repository")
	case errors.As(err, &te) && te.StatusCode >= 500:
		return c.fail(KindUnreachable, op, err, previousInForce+"; the next poll retries")
	}
	if kind, hint, ok := classify(err); ok {
		return c.fail(kind, op, err, hint)
	}
	return c.fail(KindFetch, op, err, "")
}

// isStatus reports whether err is a registry response with status code.
func isStatus(err error, code int) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == code
}
