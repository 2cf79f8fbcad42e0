package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// ociHelm is what a Helm repository source with an oci:// URL keeps: the
// registry prefix its charts are below (helm push oci://host/path stores
// chart c as host/path/c, one tag per version), the registry's host (the
// key of its Docker config entry) and the puller reused between polls.
type ociHelm struct {
	base     string
	registry string
	pullers  pullerCache
}

// newOCIHelm checks an oci:// Helm repository URL.
func newOCIHelm(u *url.URL) (*ociHelm, error) {
	if u.RawQuery != "" || u.Fragment != "" {
		return nil, fmt.Errorf("an oci:// repository URL has no query or fragment")
	}
	base := u.Host
	if p := strings.Trim(u.Path, "/"); p != "" {
		base += "/" + p
	}
	repo, err := name.NewRepository(base+"/chart", name.StrictValidation)
	if err != nil {
		return nil, fmt.Errorf("%q is not a registry and repository prefix: %w", base, err)
	}
	return &ociHelm{base: base, registry: repo.RegistryStr()}, nil
}

// chartRepo is the registry repository of one chart.
func (o *ociHelm) chartRepo(chart string) (name.Repository, error) {
	return name.NewRepository(o.base+"/"+chart, name.StrictValidation)
}

// ociChart is one chart ref resolved in a registry.
type ociChart struct {
	ref     ChartRef
	repo    name.Repository
	version string
	target  ociTarget
}

// pollOCI is Poll for a Helm repository at an oci:// URL; the caller
// holds pollMu. Each chart costs a tag listing and a HEAD of the highest
// matching tag; when every chart resolves to the digest in force nothing
// is downloaded.
func (r *HelmRepo) pollOCI(ctx context.Context) (Revision, Result, error) {
	prev, hasPrev := r.Last()
	res := Result{Previous: prev.SHA}
	c, err := r.ociHelmPull()
	if err != nil {
		return prev, res, err
	}
	resolved, err := r.resolveOCICharts(ctx, c)
	if err != nil {
		return prev, res, err
	}
	id := ociChartsID(resolved)
	if hasPrev && id == prev.SHA && isDir(prev.Dir) {
		return prev, res, nil
	}
	rev, err := r.materializeOCI(ctx, c, resolved, id)
	if err != nil {
		return prev, res, err
	}
	r.setLast(rev)
	r.sweepTrees()
	res.Moved = Updated
	return rev, res, nil
}

// ociHelmPull reads helm.auth's files (as an OCI source's oci.auth, see
// registryAuth) and returns the poll's registry client.
func (r *HelmRepo) ociHelmPull() (ociPull, error) {
	var ra registryAuth
	caFile := ""
	if a := r.spec.Auth; a != nil {
		caFile = a.CAFile
		ra = registryAuth{section: "helm.auth", dockerConfigFile: a.DockerConfigFile, username: a.Username, passwordFile: a.PasswordFile, tokenFile: a.BearerTokenFile, tokenField: "bearerTokenFile"}
	}
	creds, err := ra.read(r.oci.registry)
	if err != nil {
		return ociPull{}, r.newError(KindAuth, "read credentials", err, "")
	}
	p, err := r.oci.pullers.get(creds, caFile, false)
	if err != nil {
		return ociPull{}, r.newError(KindAuth, "connect", fmt.Errorf("helm.auth.%w", err), "")
	}
	return ociPull{p: p, creds: creds, fail: r.newError}, nil
}

// resolveOCICharts resolves every chart of the spec, in the spec's order:
// the highest tag in the chart's range ('_' read as '+', as helm push
// writes it), then its digest.
func (r *HelmRepo) resolveOCICharts(ctx context.Context, c ociPull) ([]ociChart, error) {
	out := make([]ociChart, 0, len(r.spec.Charts))
	for _, ref := range r.spec.Charts {
		repo, err := r.oci.chartRepo(ref.Chart)
		if err != nil {
			return nil, r.newError(KindRefNotFound, "resolve chart", fmt.Errorf("chart %q: %w", ref.Chart, err), "")
		}
		tags, err := c.p.List(ctx, repo)
		if isStatus(err, http.StatusNotFound) {
			return nil, r.newError(KindRefNotFound, "resolve chart", fmt.Errorf("chart %s: oci://%s does not exist", ref.Chart, repo.Name()), "push the chart with helm push, or fix helm.chart")
		}
		if err != nil {
			return nil, c.classify("list versions of chart "+ref.Chart, err)
		}
		tag, ok := highestTag(tags, r.ranges[ref])
		if !ok {
			return nil, r.newError(KindRefNotFound, "resolve chart", fmt.Errorf("chart %s: none of its %d tags is a version matching %q", ref.Chart, len(tags), versionOrAny(ref.Version)), "push a matching version or change helm.version")
		}
		tgt, err := c.headTag(ctx, repo, tag)
		if err != nil {
			return nil, err
		}
		out = append(out, ociChart{ref: ref, repo: repo, version: strings.ReplaceAll(tag, "_", "+"), target: tgt})
	}
	return out, nil
}

// ociChartsID names a set of resolved charts: the same charts at the
// same versions and digests are the same revision.
func ociChartsID(resolved []ociChart) string {
	lines := make([]string, 0, len(resolved))
	for _, c := range resolved {
		lines = append(lines, strings.Join([]string{c.ref.Chart, c.ref.Version, c.version, c.target.digest.String()}, "\x00"))
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte("oci\n" + strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// materializeOCI writes the revision's tree, trees/<id>/<n>/<chart>, as
// materialize does for an HTTP repository: each chart's layer extracted
// with the OCI sources' rules (extractTarGz), then its remote
// dependencies fetched from declared sources. A tree of the same id left
// by an earlier poll (or process) is complete and used as it is, with no
// download.
func (r *HelmRepo) materializeOCI(ctx context.Context, c ociPull, resolved []ociChart, id string) (Revision, error) {
	final := filepath.Join(r.treesDir(), id)
	if isDir(final) {
		return r.ociHelmRevision(resolved, id), nil
	}
	tmp, err := os.MkdirTemp(r.treesDir(), ".tmp-")
	if err != nil {
		return Revision{}, r.newError(KindCache, "write tree", err, "")
	}
	defer os.RemoveAll(tmp)
	for i, oc := range resolved {
		if err := r.writeOCIChart(ctx, c, oc, filepath.Join(tmp, strconv.Itoa(i))); err != nil {
			return Revision{}, err
		}
	}
	if err := r.placeTree(tmp, final); err != nil {
		return Revision{}, r.newError(KindCache, "write tree", err, "")
	}
	return r.ociHelmRevision(resolved, id), nil
}

// ociHelmRevision is the revision of resolved charts written to
// trees/<id>.
func (r *HelmRepo) ociHelmRevision(resolved []ociChart, id string) Revision {
	final := filepath.Join(r.treesDir(), id)
	charts := make([]ChartRevision, 0, len(resolved))
	for i, oc := range resolved {
		root := filepath.Join(final, strconv.Itoa(i))
		charts = append(charts, ChartRevision{Ref: oc.ref, Version: oc.version, Digest: oc.target.digest.Hex, Root: root, ChartDir: filepath.Join(root, oc.ref.Chart)})
	}
	return Revision{Source: r.spec.Name, URL: r.displayURL(), Ref: "helm oci", SHA: id, Tag: chartsTag(charts), Dir: final, Helm: &HelmRevision{Charts: charts}}
}

// writeOCIChart extracts one chart's layer into root/<chart> and fetches
// its remote dependencies.
func (r *HelmRepo) writeOCIChart(ctx context.Context, c ociPull, oc ociChart, root string) error {
	dir := filepath.Join(root, oc.ref.Chart)
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return r.newError(KindCache, "write tree", err, "")
	}
	only := MediaTypeHelmChart
	_, layer, _, err := c.content(ctx, oc.repo, oc.target.digest, &only)
	if err != nil {
		return err
	}
	if err := c.extract(ctx, oc.repo, layer, true, dir); err != nil {
		return err
	}
	return r.fetchDependencies(ctx, oc.ref.Chart, dir)
}
