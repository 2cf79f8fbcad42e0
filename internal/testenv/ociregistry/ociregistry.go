package ociregistry

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"crypto/subtle"
	"encoding/pem"
	"fmt"
	"io"
	"log"
	"maps"
	"net/http"
	"net/http/httptest"
	"slices"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"
)

// Media types of the artifacts this package pushes.
const (
	FluxConfig  types.MediaType = "application/vnd.cncf.flux.config.v1+json"
	FluxContent types.MediaType = "application/vnd.cncf.flux.content.v1.tar+gzip"
	HelmConfig  types.MediaType = "application/vnd.cncf.helm.config.v1+json"
	HelmChart   types.MediaType = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// Registry is an in-memory registry on a loopback port.
type Registry struct {
	// Host is host:port, as oci:// URLs name it.
	Host string
	// CAPEM is the PEM certificate a StartTLS registry is served with
	// (nil for Start).
	CAPEM []byte

	srv      *httptest.Server
	requests atomic.Int64
	mu       sync.Mutex
	log      []string
	user     string
	password string
}

// Start serves an empty registry over plain HTTP until Close.
func Start() *Registry { return start(httptest.NewServer) }

// StartTLS serves an empty registry over HTTPS with a certificate of its
// own CA (CAPEM) until Close.
func StartTLS() *Registry {
	r := start(httptest.NewTLSServer)
	r.CAPEM = pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: r.srv.Certificate().Raw})
	return r
}

func start(serve func(http.Handler) *httptest.Server) *Registry {
	r := &Registry{}
	h := registry.New(registry.Logger(log.New(io.Discard, "", 0)))
	r.srv = serve(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		r.requests.Add(1)
		r.mu.Lock()
		r.log = append(r.log, req.Method+" "+req.URL.Path)
		user, pw := r.user, r.password
		r.mu.Unlock()
		if user != "" && !r.authorized(req, user, pw) {
			w.Header().Set("WWW-Authenticate", `Basic realm="test"`)
			http.Error(w, `{"errors":[{"code":"UNAUTHORIZED","message":"authentication required"}]}`, http.StatusUnauthorized)
			return
		}
		h.ServeHTTP(w, req)
	}))
	r.Host = strings.TrimPrefix(strings.TrimPrefix(r.srv.URL, "http://"), "https://")
	return r
}

func (r *Registry) authorized(req *http.Request, user, pw string) bool {
	u, p, ok := req.BasicAuth()
	return ok && subtle.ConstantTimeCompare([]byte(u), []byte(user)) == 1 && subtle.ConstantTimeCompare([]byte(p), []byte(pw)) == 1
}

// Close stops the registry.
func (r *Registry) Close() { r.srv.Close() }

// RequireBasic makes every later request need these credentials ("" user:
// none). Push goes on working: it sends them.
func (r *Registry) RequireBasic(user, password string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.user, r.password = user, password
}

// Requests returns how many requests the registry answered so far.
func (r *Registry) Requests() int64 { return r.requests.Load() }

// Log returns "METHOD /path" of every request answered so far.
func (r *Registry) Log() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.log...)
}

// URL returns oci://host/repo.
func (r *Registry) URL(repo string) string { return "oci://" + r.Host + "/" + repo }

// Entry is one raw tar entry (Header.Size is set from Body for regular
// files).
type Entry struct {
	Header tar.Header
	Body   string
}

// Files are the entries of a plain archive of regular files, sorted.
func Files(files map[string]string) []Entry {
	out := make([]Entry, 0, len(files))
	for _, n := range slices.Sorted(maps.Keys(files)) {
		out = append(out, Entry{Header: tar.Header{Name: n, Typeflag: tar.TypeReg, Mode: 0o644}, Body: files[n]})
	}
	return out
}

// TarGz writes entries as a tar+gzip stream.
func TarGz(entries []Entry) ([]byte, error) {
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		h := e.Header
		if h.Typeflag == tar.TypeReg {
			h.Size = int64(len(e.Body))
		}
		if err := tw.WriteHeader(&h); err != nil {
			return nil, err
		}
		if h.Typeflag == tar.TypeReg {
			if _, err := io.WriteString(tw, e.Body); err != nil {
				return nil, err
			}
		}
	}
	if err := tw.Close(); err != nil {
		return nil, err
	}
	if err := zw.Close(); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

// Push pushes an artifact of one layer (entries as tar+gzip, of media
// type layer) with a config of media type config to repo:tag and returns
// its manifest digest.
func (r *Registry) Push(repo, tag string, config, layer types.MediaType, entries []Entry) (string, error) {
	blob, err := TarGz(entries)
	if err != nil {
		return "", err
	}
	img, err := mutate.AppendLayers(empty.Image, static.NewLayer(blob, layer))
	if err != nil {
		return "", err
	}
	img = mutate.ConfigMediaType(mutate.MediaType(img, types.OCIManifestSchema1), config)
	img = mutate.Annotations(img, map[string]string{
		"org.opencontainers.image.source":   "https://example.com/manifests.git",
		"org.opencontainers.image.revision": "main@sha1:" + tag,
	}).(v1.Image)
	ref, err := name.NewTag(r.Host+"/"+repo+":"+tag, name.Insecure)
	if err != nil {
		return "", err
	}
	if err := remote.Write(ref, img, remote.WithAuth(r.pushAuth()), remote.WithTransport(r.srv.Client().Transport)); err != nil {
		return "", fmt.Errorf("push %s: %w", ref, err)
	}
	d, err := img.Digest()
	if err != nil {
		return "", err
	}
	return d.String(), nil
}

// PushFiles pushes files as flux push artifact does.
func (r *Registry) PushFiles(repo, tag string, files map[string]string) (string, error) {
	return r.Push(repo, tag, FluxConfig, FluxContent, Files(files))
}

// PushChart pushes a chart as helm push does: files below <chart>/, tag
// version with '+' written '_'.
func (r *Registry) PushChart(repo, chart, version string, files map[string]string) (string, error) {
	prefixed := make(map[string]string, len(files))
	for n, b := range files {
		prefixed[chart+"/"+n] = b
	}
	return r.Push(repo, strings.ReplaceAll(version, "+", "_"), HelmConfig, HelmChart, Files(prefixed))
}

func (r *Registry) pushAuth() authn.Authenticator {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.user == "" {
		return authn.Anonymous
	}
	return &authn.Basic{Username: r.user, Password: r.password}
}
