package source

import (
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"sync"
)

// resolvedChart is one chart ref and the version index.yaml resolves it
// to.
type resolvedChart struct {
	ref ChartRef
	cv  *indexEntry
}

// Poll reads index.yaml with a conditional request. When the repository
// answers 304 Not Modified, or the index resolves every chart to the
// version and digest in force, Poll returns the revision in force with
// Unchanged: one small request, no download. Otherwise it downloads the
// archives it has not cached (by digest, checked against index.yaml),
// expands them under the cache directory with their remote dependencies
// (from declared sources only), and makes the new revision the one in
// force.
//
// On error the revision in force and its directory are kept, and the
// error is an *Error whose Kind says why. ctx bounds the requests.
func (r *HelmRepo) Poll(ctx context.Context) (Revision, Result, error) {
	r.pollMu.Lock()
	defer r.pollMu.Unlock()
	if r.oci != nil {
		return r.pollOCI(ctx)
	}
	prev, hasPrev := r.Last()
	res := Result{Previous: prev.SHA}
	creds, err := r.readHelmCredentials()
	if err != nil {
		return prev, res, err
	}
	client, err := r.helmClient(creds)
	if err != nil {
		return prev, res, err
	}
	idx, err := r.fetchIndex(ctx, client, creds)
	if err != nil {
		return prev, res, err
	}
	if hasPrev && idx.gen == r.resolvedGen {
		return prev, res, nil
	}
	resolved, err := r.resolveAll(idx.file)
	if err != nil {
		return prev, res, err
	}
	id := revisionID(resolved)
	if hasPrev && id == prev.SHA {
		r.resolvedGen = idx.gen
		return prev, res, nil
	}
	rev, err := r.materialize(ctx, client, creds, resolved, id)
	if err != nil {
		return prev, res, err
	}
	r.resolvedGen = idx.gen
	r.setLast(rev)
	r.sweepTrees()
	res.Moved = Updated
	return rev, res, nil
}

// resolveAll resolves every chart of the spec, in the spec's order.
func (r *HelmRepo) resolveAll(index *helmIndex) ([]resolvedChart, error) {
	out := make([]resolvedChart, 0, len(r.spec.Charts))
	for _, ref := range r.spec.Charts {
		cv, err := resolveChart(index, ref, r.ranges[ref], r.spec.Name)
		if err != nil {
			return nil, r.newError(KindRefNotFound, "resolve chart", err, "")
		}
		out = append(out, resolvedChart{ref: ref, cv: cv})
	}
	return out, nil
}

// revisionID names a set of resolved charts: the sha256 of each ref's
// chart, range, version and digest. The same charts at the same versions
// and digests are the same revision.
func revisionID(resolved []resolvedChart) string {
	lines := make([]string, 0, len(resolved))
	for _, c := range resolved {
		lines = append(lines, strings.Join([]string{c.ref.Chart, c.ref.Version, c.cv.Version, c.cv.Digest, strings.Join(c.cv.URLs, ",")}, "\x00"))
	}
	sort.Strings(lines)
	sum := sha256.Sum256([]byte(strings.Join(lines, "\n")))
	return hex.EncodeToString(sum[:])
}

// materialize writes the revision's tree, trees/<id>/<n>/<chart>, one
// numbered root per chart ref, through a temporary directory renamed into
// place (a tree is always complete).
func (r *HelmRepo) materialize(ctx context.Context, client *http.Client, creds helmCredentials, resolved []resolvedChart, id string) (Revision, error) {
	final := filepath.Join(r.treesDir(), id)
	tmp, err := os.MkdirTemp(r.treesDir(), ".tmp-")
	if err != nil {
		return Revision{}, r.newError(KindCache, "write tree", err, "")
	}
	defer os.RemoveAll(tmp)
	charts := make([]ChartRevision, 0, len(resolved))
	for i, c := range resolved {
		cr, err := r.writeChart(ctx, client, creds, c, filepath.Join(tmp, strconv.Itoa(i)))
		if err != nil {
			return Revision{}, err
		}
		charts = append(charts, cr)
	}
	if err := r.placeTree(tmp, final); err != nil {
		return Revision{}, r.newError(KindCache, "write tree", err, "")
	}
	for i := range charts {
		charts[i].Root = filepath.Join(final, strconv.Itoa(i))
		charts[i].ChartDir = filepath.Join(charts[i].Root, filepath.Base(charts[i].ChartDir))
	}
	return Revision{Source: r.spec.Name, URL: r.displayURL(), Ref: "helm index", SHA: id, Tag: chartsTag(charts), Dir: final, Helm: &HelmRevision{Charts: charts}}, nil
}

// writeChart expands one resolved chart, with its remote dependencies,
// into root.
func (r *HelmRepo) writeChart(ctx context.Context, client *http.Client, creds helmCredentials, c resolvedChart, root string) (ChartRevision, error) {
	data, sum, err := r.archive(ctx, client, creds, c.cv)
	if err != nil {
		return ChartRevision{}, err
	}
	dir, err := expand(root, data)
	if err != nil {
		return ChartRevision{}, r.newError(KindFetch, fmt.Sprintf("expand chart %s %s", c.ref.Chart, c.cv.Version), err, "the archive is not a chart helm can read")
	}
	if err := r.fetchDependencies(ctx, c.ref.Chart, dir); err != nil {
		return ChartRevision{}, err
	}
	return ChartRevision{Ref: c.ref, Version: c.cv.Version, Digest: sum, ChartDir: dir}, nil
}

// placeTree renames tmp to final; a final tree left by an earlier poll
// of the same revision is complete and kept.
func (r *HelmRepo) placeTree(tmp, final string) error {
	if isDir(final) {
		return nil
	}
	return os.Rename(tmp, final)
}

// chartsTag is the revision's human name: "chart-version" of each chart.
func chartsTag(charts []ChartRevision) string {
	names := make([]string, 0, len(charts))
	for _, c := range charts {
		names = append(names, c.Ref.Chart+"-"+c.Version)
	}
	return strings.Join(names, ",")
}

func (r *HelmRepo) treesDir() string { return filepath.Join(r.dir, "trees") }

// Hold keeps the revision's tree on disk until release is called; it
// fails when the tree was already deleted (a newer revision is in force
// and nobody held this one).
func (r *HelmRepo) Hold(rev Revision) (release func(), err error) {
	key := filepath.Base(rev.Dir)
	r.mu.Lock()
	defer r.mu.Unlock()
	if rev.Dir == "" || filepath.Dir(rev.Dir) != r.treesDir() || (r.pins[key] == 0 && !r.currentLocked(key)) || !isDir(rev.Dir) {
		return nil, r.newError(KindCache, "hold tree", fmt.Errorf("the tree of revision %s is gone: a newer revision is in force", shortSHA(rev.SHA)), "use the revision in force (Last)")
	}
	r.pinLocked(key)
	var once sync.Once
	return func() { once.Do(func() { r.unpin(key) }) }, nil
}

// unpin drops one hold; the tree goes at the next poll's sweep.
func (r *HelmRepo) unpin(key string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.pins[key]--; r.pins[key] <= 0 {
		delete(r.pins, key)
	}
}

// sweepTrees deletes every tree that is neither in force nor held, and
// leftover temporary directories. Only a poll calls it, with pollMu held.
func (r *HelmRepo) sweepTrees() {
	r.sweep(r.treesDir(), func(name string) string { return filepath.Join(r.treesDir(), name) })
}
