package source

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/url"
	"os"
	"path/filepath"
	"strings"

	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
)

// digestOK reports whether a digest from index.yaml is a sha256 in hex.
func digestOK(d string) bool {
	if len(d) != 64 {
		return false
	}
	_, err := hex.DecodeString(d)
	return err == nil
}

// archivePath is where a chart version's archive is cached: by its
// digest when index.yaml gives one, else by the archive's URL.
func (r *HelmRepo) archivePath(cv *indexEntry) string {
	if d := strings.ToLower(cv.Digest); digestOK(d) {
		return filepath.Join(r.dir, "charts", d+".tgz")
	}
	sum := sha256.Sum256([]byte(strings.Join(cv.URLs, "\n") + "\n" + cv.Version))
	return filepath.Join(r.dir, "charts", "url-"+hex.EncodeToString(sum[:])+".tgz")
}

// archive returns the chart version's archive from the cache, downloading
// it (and checking its digest) only when it is not there.
func (r *HelmRepo) archive(ctx context.Context, client *http.Client, creds helmCredentials, cv *indexEntry) ([]byte, string, error) {
	file := r.archivePath(cv)
	want := strings.ToLower(cv.Digest)
	if data, err := os.ReadFile(file); err == nil {
		if sum := sha256Hex(data); !digestOK(want) || sum == want {
			return data, sum, nil
		}
	}
	data, err := r.download(ctx, client, creds, cv)
	if err != nil {
		return nil, "", err
	}
	sum := sha256Hex(data)
	if digestOK(want) && sum != want {
		return nil, "", r.newError(KindVerification, "download chart", fmt.Errorf("chart %s %s: the archive's sha256 is %s, index.yaml says %s", cv.Name, cv.Version, sum, want), "the repository serves an archive that is not the one it indexes; ask its owners to re-index it")
	}
	if err := writeFileAtomic(file, data); err != nil {
		return nil, "", r.newError(KindCache, "cache chart", err, "")
	}
	return data, sum, nil
}

// download fetches the archive at the chart version's first URL,
// resolved against the repository's URL.
func (r *HelmRepo) download(ctx context.Context, client *http.Client, creds helmCredentials, cv *indexEntry) ([]byte, error) {
	op := fmt.Sprintf("download chart %s %s", cv.Name, cv.Version)
	if len(cv.URLs) == 0 {
		return nil, r.newError(KindFetch, op, fmt.Errorf("index.yaml lists no URL for it"), "")
	}
	ref, err := url.Parse(cv.URLs[0])
	if err != nil {
		return nil, r.newError(KindFetch, op, fmt.Errorf("index.yaml lists an invalid URL for it"), "")
	}
	u := r.base.ResolveReference(ref)
	if u.User != nil || (u.Scheme != "https" && u.Scheme != "http") {
		return nil, r.newError(KindFetch, op, fmt.Errorf("index.yaml lists a URL that is not plain http(s) for it"), "")
	}
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u.String(), nil)
	if err != nil {
		return nil, r.newError(KindFetch, op, err, "")
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, r.httpError(op, err, creds)
	}
	defer resp.Body.Close()
	if err := r.statusError(op, resp, KindRefNotFound); err != nil {
		return nil, err
	}
	data, err := readLimited(resp.Body, maxChartBytes)
	if err != nil {
		return nil, r.httpError(op, err, creds)
	}
	return data, nil
}

func sha256Hex(data []byte) string {
	sum := sha256.Sum256(data)
	return hex.EncodeToString(sum[:])
}

// writeFileAtomic writes data to file through a temporary file and a
// rename, so a reader never sees half an archive.
func writeFileAtomic(file string, data []byte) error {
	tmp, err := os.CreateTemp(filepath.Dir(file), ".tmp-*")
	if err != nil {
		return err
	}
	defer os.Remove(tmp.Name())
	if _, err := tmp.Write(data); err != nil {
		tmp.Close()
		return err
	}
	if err := tmp.Close(); err != nil {
		return err
	}
	return os.Rename(tmp.Name(), file)
}

// expand writes a chart archive into root/<chart name> with Helm's
// expander (paths confined to root) and returns the chart's directory.
func expand(root string, data []byte) (string, error) {
	if err := os.MkdirAll(root, 0o755); err != nil {
		return "", err
	}
	if err := chartutil.Expand(root, bytes.NewReader(data)); err != nil {
		return "", err
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		return "", err
	}
	if len(entries) != 1 || !entries[0].IsDir() {
		return "", fmt.Errorf("the archive holds %d top-level entries, want one chart directory", len(entries))
	}
	return filepath.Join(root, entries[0].Name()), nil
}
