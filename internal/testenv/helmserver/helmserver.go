// Package helmserver serves a Helm chart repository (index.yaml and chart
// archives) on loopback for tests. Charts are packaged in the test with
// Helm's own chartutil.Save; the index is rebuilt on every Publish and
// answers conditional requests (ETag/If-None-Match and Last-Modified/
// If-Modified-Since) with 304, so tests can count what a poll costs.
//
// It is a test helper: it does not guarantee anything about large
// repositories, and it keeps everything in memory.
package helmserver

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httptest"
	"os"
	"sort"
	"strings"
	"sync"
	"time"

	"helm.sh/helm/v4/pkg/chart/common"
	chart "helm.sh/helm/v4/pkg/chart/v2"
	chartutil "helm.sh/helm/v4/pkg/chart/v2/util"
	"sigs.k8s.io/yaml"
)

// Request is one request the server answered.
type Request struct {
	Path string
	// Authorization is the header the request carried ("" for none).
	Authorization string
	// Status is the status code answered.
	Status int
}

// Server is a loopback Helm chart repository.
type Server struct {
	// URL is the repository's base URL (index.yaml is below it).
	URL string
	srv *httptest.Server

	mu       sync.Mutex
	entries  map[string][]entry
	files    map[string][]byte
	index    []byte
	modified time.Time
	requests []Request
	// auth, when set, is the Authorization header every request must
	// carry (401 otherwise).
	auth string
	// ChartBase, when set, is where index.yaml says the archives are
	// (an absolute URL prefix: another server); default relative URLs.
	chartBase string
	// noDigest leaves the digest out of index.yaml.
	noDigest bool
}

type entry struct {
	Name    string   `json:"name"`
	Version string   `json:"version"`
	Digest  string   `json:"digest,omitempty"`
	URLs    []string `json:"urls"`
	Created string   `json:"created"`
	// APIVersion is the chart's.
	APIVersion string `json:"apiVersion"`
}

// Start serves an empty repository on loopback; Close stops it.
func Start() *Server {
	s := &Server{entries: map[string][]entry{}, files: map[string][]byte{}}
	s.srv = httptest.NewServer(http.HandlerFunc(s.serve))
	s.URL = s.srv.URL
	s.rebuildLocked()
	return s
}

// StartTLS is Start over TLS with httptest's certificate; CAFile writes
// that certificate where a client can be told to trust it.
func StartTLS() *Server {
	s := &Server{entries: map[string][]entry{}, files: map[string][]byte{}}
	s.srv = httptest.NewUnstartedServer(http.HandlerFunc(s.serve))
	// Clients that do not trust the certificate are what tests check.
	s.srv.Config.ErrorLog = log.New(io.Discard, "", 0)
	s.srv.StartTLS()
	s.URL = s.srv.URL
	s.rebuildLocked()
	return s
}

// Close stops the server.
func (s *Server) Close() { s.srv.Close() }

// Handler is the repository's handler, for a server a test starts itself.
func (s *Server) Handler() http.Handler { return http.HandlerFunc(s.serve) }

// CACert returns the PEM certificate of a StartTLS server.
func (s *Server) CACert() []byte {
	c := s.srv.Certificate()
	if c == nil {
		return nil
	}
	return pemCert(c.Raw)
}

// RequireAuth makes every request need the Authorization header value.
func (s *Server) RequireAuth(header string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.auth = header
}

// ServeChartsFrom makes index.yaml list archives under base (another
// server's URL) instead of relative to the repository.
func (s *Server) ServeChartsFrom(base string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.chartBase = strings.TrimSuffix(base, "/")
	s.rebuildLocked()
}

// OmitDigests leaves digests out of index.yaml.
func (s *Server) OmitDigests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.noDigest = true
	s.rebuildLocked()
}

// Chart is a chart to publish: its name, version and files (paths
// relative to the chart's directory: values.yaml, templates/…).
type Chart struct {
	Name, Version string
	Files         map[string]string
	// Dependencies are listed in Chart.yaml (not vendored).
	Dependencies []*chart.Dependency
}

// Package builds the chart's archive with Helm's chartutil.Save.
func Package(c Chart) ([]byte, error) {
	ch := &chart.Chart{Metadata: &chart.Metadata{APIVersion: chart.APIVersionV2, Name: c.Name, Version: c.Version, Dependencies: c.Dependencies}}
	names := make([]string, 0, len(c.Files))
	for n := range c.Files {
		names = append(names, n)
	}
	sort.Strings(names)
	for _, n := range names {
		f := &common.File{Name: n, Data: []byte(c.Files[n])}
		switch {
		case n == chartutil.ValuesfileName:
			ch.Raw = append(ch.Raw, f)
		case strings.HasPrefix(n, "templates/"):
			ch.Templates = append(ch.Templates, f)
		default:
			ch.Files = append(ch.Files, f)
		}
	}
	dir, err := os.MkdirTemp("", "helmserver-")
	if err != nil {
		return nil, err
	}
	defer os.RemoveAll(dir)
	file, err := chartutil.Save(ch, dir)
	if err != nil {
		return nil, err
	}
	return os.ReadFile(file)
}

// Publish packages the chart, serves its archive and lists it in
// index.yaml; it returns the archive's sha256.
func (s *Server) Publish(c Chart) (string, error) {
	data, err := Package(c)
	if err != nil {
		return "", err
	}
	return s.PublishArchive(c.Name, c.Version, data), nil
}

// PublishArchive serves data as the archive of name at version and lists
// it in index.yaml with data's sha256, which it returns.
func (s *Server) PublishArchive(name, version string, data []byte) string {
	sum := sha256.Sum256(data)
	digest := hex.EncodeToString(sum[:])
	s.mu.Lock()
	defer s.mu.Unlock()
	file := fmt.Sprintf("charts/%s-%s.tgz", name, version)
	s.files["/"+file] = data
	s.entries[name] = append(s.entries[name], entry{Name: name, Version: version, Digest: digest, URLs: []string{file}, APIVersion: chart.APIVersionV2})
	s.rebuildLocked()
	return digest
}

// ReplaceArchive serves other bytes at name/version's URL without
// touching index.yaml (a tampered archive).
func (s *Server) ReplaceArchive(name, version string, data []byte) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.files[fmt.Sprintf("/charts/%s-%s.tgz", name, version)] = data
}

// Archive returns the archive served for name/version.
func (s *Server) Archive(name, version string) []byte {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.files[fmt.Sprintf("/charts/%s-%s.tgz", name, version)]
}

// rebuildLocked writes index.yaml from the entries.
func (s *Server) rebuildLocked() {
	entries := map[string][]entry{}
	for name, es := range s.entries {
		for _, e := range es {
			if s.chartBase != "" {
				e.URLs = []string{s.chartBase + "/" + e.URLs[0]}
			}
			if s.noDigest {
				e.Digest = ""
			}
			entries[name] = append(entries[name], e)
		}
	}
	idx, err := yaml.Marshal(map[string]any{"apiVersion": "v1", "entries": entries})
	if err != nil {
		panic(err)
	}
	s.index = idx
	// Last-Modified has second precision; keep it moving on every change.
	s.modified = time.Now().UTC().Truncate(time.Second)
}

// Requests returns the requests answered so far.
func (s *Server) Requests() []Request {
	s.mu.Lock()
	defer s.mu.Unlock()
	return append([]Request(nil), s.requests...)
}

// ResetRequests forgets the requests answered so far.
func (s *Server) ResetRequests() {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.requests = nil
}

func (s *Server) serve(w http.ResponseWriter, r *http.Request) {
	s.mu.Lock()
	defer s.mu.Unlock()
	status := s.answer(w, r)
	s.requests = append(s.requests, Request{Path: r.URL.Path, Authorization: r.Header.Get("Authorization"), Status: status})
}

// answer writes the response to r and returns its status.
func (s *Server) answer(w http.ResponseWriter, r *http.Request) int {
	if s.auth != "" && r.Header.Get("Authorization") != s.auth {
		http.Error(w, "unauthorized", http.StatusUnauthorized)
		return http.StatusUnauthorized
	}
	if r.URL.Path == "/index.yaml" {
		return s.serveIndex(w, r)
	}
	data, ok := s.files[r.URL.Path]
	if !ok {
		http.NotFound(w, r)
		return http.StatusNotFound
	}
	w.Header().Set("Content-Type", "application/gzip")
	_, _ = w.Write(data)
	return http.StatusOK
}

// serveIndex answers index.yaml, 304 when the client has it.
func (s *Server) serveIndex(w http.ResponseWriter, r *http.Request) int {
	sum := sha256.Sum256(s.index)
	etag := `"` + hex.EncodeToString(sum[:8]) + `"`
	w.Header().Set("ETag", etag)
	w.Header().Set("Last-Modified", s.modified.Format(http.TimeFormat))
	if r.Header.Get("If-None-Match") == etag {
		w.WriteHeader(http.StatusNotModified)
		return http.StatusNotModified
	}
	w.Header().Set("Content-Type", "application/x-yaml")
	_, _ = w.Write(s.index)
	return http.StatusOK
}
