package source

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	"sigs.k8s.io/yaml"
)

// Size limits of what a Helm repository sends.
const (
	maxIndexBytes = 64 << 20
	maxChartBytes = 64 << 20
)

// cachedIndex is the last index.yaml a repository sent, with the
// validators a conditional request sends back.
type cachedIndex struct {
	etag, lastModified string
	file               *helmIndex
	// gen counts the index documents received: a poll compares it with
	// the one it last resolved against, since another chart's dependency
	// may have read a newer index in between.
	gen uint64
}

// indexResult is one index request's outcome: the index in force and
// its generation (unchanged after a 304 Not Modified).
type indexResult struct {
	file *helmIndex
	gen  uint64
}

// fetchIndex reads index.yaml with a conditional request (If-None-Match
// and If-Modified-Since from the last answer): a repository that did not
// change answers 304 and costs no download.
func (r *HelmRepo) fetchIndex(ctx context.Context, client *http.Client, creds helmCredentials) (indexResult, error) {
	r.idxMu.Lock()
	defer r.idxMu.Unlock()
	u := r.base.JoinPath("index.yaml")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return indexResult{}, r.newError(KindFetch, "read index.yaml", err, "")
	}
	if c := r.idx; c != nil {
		if c.etag != "" {
			req.Header.Set("If-None-Match", c.etag)
		}
		if c.lastModified != "" {
			req.Header.Set("If-Modified-Since", c.lastModified)
		}
	}
	resp, err := client.Do(req)
	if err != nil {
		return indexResult{}, r.httpError("read index.yaml", err, creds)
	}
	defer resp.Body.Close()
	if resp.StatusCode == http.StatusNotModified && r.idx != nil {
		return indexResult{file: r.idx.file, gen: r.idx.gen}, nil
	}
	if err := r.statusError("read index.yaml", resp, KindRepositoryNotFound); err != nil {
		return indexResult{}, err
	}
	data, err := readLimited(resp.Body, maxIndexBytes)
	if err != nil {
		return indexResult{}, r.httpError("read index.yaml", err, creds)
	}
	file, err := parseIndex(data)
	if err != nil {
		return indexResult{}, r.newError(KindFetch, "read index.yaml", err, "check that helm.url is a Helm chart repository (helm repo add accepts it)")
	}
	var gen uint64 = 1
	if r.idx != nil {
		gen = r.idx.gen + 1
	}
	r.idx = &cachedIndex{etag: resp.Header.Get("ETag"), lastModified: resp.Header.Get("Last-Modified"), file: file, gen: gen}
	return indexResult{file: file, gen: gen}, nil
}

// helmIndex is the part of a repository's index.yaml syncd reads (Helm's
// repo.IndexFile; its package pulls in Helm's getters and plugin
// runtime, which syncd does not use).
type helmIndex struct {
	APIVersion string                   `json:"apiVersion"`
	Entries    map[string][]*indexEntry `json:"entries"`
}

// indexEntry is one chart version index.yaml lists.
type indexEntry struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Digest  string   `json:"digest,omitempty"`
	URLs    []string `json:"urls"`
}

// parseIndex decodes index.yaml, dropping entries without a version.
// Its errors never quote the document.
func parseIndex(data []byte) (*helmIndex, error) {
	f := &helmIndex{}
	if err := yaml.Unmarshal(data, f); err != nil {
		return nil, errors.New("index.yaml is not a Helm repository index (YAML with apiVersion and entries)")
	}
	if f.APIVersion == "" {
		return nil, errors.New("index.yaml has no apiVersion: it is not a Helm repository index")
	}
	for name, vs := range f.Entries {
		kept := vs[:0]
		for _, cv := range vs {
			if cv != nil && cv.Version != "" {
				kept = append(kept, cv)
			}
		}
		f.Entries[name] = kept
	}
	return f, nil
}

// readLimited reads at most limit bytes, failing beyond.
func readLimited(body io.Reader, limit int64) ([]byte, error) {
	data, err := io.ReadAll(io.LimitReader(body, limit+1))
	if err != nil {
		return nil, err
	}
	if int64(len(data)) > limit {
		return nil, fmt.Errorf("the response is larger than %d MiB", limit>>20)
	}
	return data, nil
}

// statusError turns a non-200 answer into an *Error; notFound is the
// Kind of a 404.
func (r *HelmRepo) statusError(op string, resp *http.Response, notFound Kind) error {
	switch code := resp.StatusCode; {
	case code == http.StatusOK:
		return nil
	case code == http.StatusUnauthorized || code == http.StatusForbidden:
		return r.newError(KindAuth, op, fmt.Errorf("HTTP %d", code), "check helm.auth (username and passwordFile, or bearerTokenFile) and its access to the repository")
	case code == http.StatusNotFound && notFound == KindRepositoryNotFound:
		return r.newError(notFound, op, fmt.Errorf("HTTP %d", code), "check helm.url: it must be the repository's base URL, the one holding index.yaml")
	case code == http.StatusNotFound:
		return r.newError(notFound, op, fmt.Errorf("HTTP %d", code), "the repository lists an archive it does not serve; ask its owners to re-index it")
	case code >= 500 || code == http.StatusTooManyRequests:
		return r.newError(KindUnreachable, op, fmt.Errorf("HTTP %d", code), previousInForce+"; the next poll retries")
	default:
		return r.newError(KindFetch, op, fmt.Errorf("HTTP %d", code), "")
	}
}

// httpError turns a transport error into an *Error, scrubbed of the
// credentials.
func (r *HelmRepo) httpError(op string, err error, creds helmCredentials) *Error {
	err = scrub(err, creds.secrets...)
	if kind, hint, ok := classify(err); ok {
		return r.newError(kind, op, err, hint)
	}
	return r.newError(KindFetch, op, err, "")
}

// resolveChart picks the version of ref that index lists: the exact
// version when listed, else the highest that matches the range (Helm's
// rule: prereleases only when the range names one). Errors name the
// chart and the source.
func resolveChart(index *helmIndex, ref ChartRef, con *semver.Constraints, source string) (*indexEntry, error) {
	vs, ok := index.Entries[ref.Chart]
	if !ok || len(vs) == 0 {
		return nil, fmt.Errorf("chart %q is not in the index of source %q: check helm.chart (helm search repo lists the charts)", ref.Chart, source)
	}
	for _, cv := range vs {
		if cv.Version == ref.Version {
			return cv, nil
		}
	}
	var matches []*indexEntry
	for _, cv := range vs {
		if v, err := semver.NewVersion(cv.Version); err == nil && con.Check(v) {
			matches = append(matches, cv)
		}
	}
	if len(matches) == 0 {
		return nil, fmt.Errorf("chart %q of source %q has no version matching %q (listed: %s): change helm.version", ref.Chart, source, versionOrAny(ref.Version), listed(vs))
	}
	return highest(matches), nil
}

// highest returns the entry with the highest semver version (all parse).
func highest(vs []*indexEntry) *indexEntry {
	best, bestV := vs[0], semver.MustParse(vs[0].Version)
	for _, cv := range vs[1:] {
		if v := semver.MustParse(cv.Version); v.GreaterThan(bestV) {
			best, bestV = cv, v
		}
	}
	return best
}

// listed names up to 5 versions of vs, highest first.
func listed(vs []*indexEntry) string {
	var names []string
	for _, cv := range vs {
		names = append(names, cv.Version)
	}
	sort.Slice(names, func(i, j int) bool { return versionLess(names[j], names[i]) })
	if len(names) > 5 {
		names = append(names[:5], "…")
	}
	return strings.Join(names, ", ")
}

// versionLess orders semver versions, and anything else after them by
// name.
func versionLess(a, b string) bool {
	va, ea := semver.NewVersion(a)
	vb, eb := semver.NewVersion(b)
	switch {
	case ea == nil && eb == nil:
		return va.LessThan(vb)
	case ea != nil && eb != nil:
		return a < b
	}
	return ea != nil
}

func versionOrAny(v string) string {
	if v == "" {
		return "any stable version"
	}
	return v
}
