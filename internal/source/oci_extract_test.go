package source

import (
	"archive/tar"
	"bytes"
	"errors"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/testenv/ociregistry"
)

func reg(name, body string) ociregistry.Entry {
	return ociregistry.Entry{Header: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644}, Body: body}
}

func link(name, target string) ociregistry.Entry {
	return ociregistry.Entry{Header: tar.Header{Name: name, Typeflag: tar.TypeSymlink, Linkname: target}}
}

func dir(name string) ociregistry.Entry {
	return ociregistry.Entry{Header: tar.Header{Name: name, Typeflag: tar.TypeDir, Mode: 0o755}}
}

// TestExtractTarGz: what an artifact may hold, and the entry named when
// it may not; a refused archive writes nothing outside root.
func TestExtractTarGz(t *testing.T) {
	small := ExtractLimits{Compressed: 1 << 20, Size: 10, Files: 3}
	tests := map[string]struct {
		entries []ociregistry.Entry
		opts    ExtractOptions
		want    map[string]string // files extracted; nil when refused
		refused string            // the refusal's message
	}{
		"plain files and dirs": {
			entries: []ociregistry.Entry{dir("./"), dir("deploy/"), reg("./deploy/a.yaml", "a"), reg("b.yaml", "b")},
			want:    map[string]string{"deploy/a.yaml": "a", "b.yaml": "b"},
		},
		"symlink inside kept": {
			entries: []ociregistry.Entry{reg("base/a.yaml", "a"), link("overlay/a.yaml", "../base/a.yaml")},
			want:    map[string]string{"base/a.yaml": "a", "overlay/a.yaml": "-> ../base/a.yaml"},
		},
		"chart directory stripped": {
			entries: []ociregistry.Entry{dir("shop/"), reg("shop/Chart.yaml", "c"), reg("shop/templates/a.yaml", "a")},
			opts:    ExtractOptions{StripFirst: true},
			want:    map[string]string{"Chart.yaml": "c", "templates/a.yaml": "a"},
		},
		"chart entry outside its directory": {
			entries: []ociregistry.Entry{reg("shop/Chart.yaml", "c"), reg("other/a.yaml", "a")},
			opts:    ExtractOptions{StripFirst: true},
			refused: `entry "other/a.yaml": is not below shop/`,
		},
		"dot-dot":           {entries: []ociregistry.Entry{reg("a/../../x", "x")}, refused: `entry "a/../../x": is not a relative path`},
		"dot-dot inside":    {entries: []ociregistry.Entry{reg("a/../x", "x")}, refused: `entry "a/../x": is not a relative path`},
		"absolute":          {entries: []ociregistry.Entry{reg("/etc/passwd", "x")}, refused: `entry "/etc/passwd": is not a relative path`},
		"absolute symlink":  {entries: []ociregistry.Entry{link("p", "/etc/passwd")}, refused: `entry "p": is a symlink to "/etc/passwd", outside the artifact`},
		"symlink up":        {entries: []ociregistry.Entry{link("a/p", "../../x")}, refused: `entry "a/p": is a symlink to "../../x"`},
		"symlink chain out": {entries: []ociregistry.Entry{dir("a/b/"), link("a/b/up", "../.."), link("out", "a/b/up/../x")}, refused: `entry "out": is a symlink that does not resolve`},
		"write through symlink": {
			entries: []ociregistry.Entry{dir("real/"), link("l", "real"), reg("l/x.yaml", "x")},
			refused: `entry "l/x.yaml": a parent of it is a symlink`,
		},
		"dangling symlink": {entries: []ociregistry.Entry{link("p", "nothing")}, refused: `entry "p": is a symlink that does not resolve`},
		"hard link":        {entries: []ociregistry.Entry{reg("a", "a"), {Header: tar.Header{Name: "b", Typeflag: tar.TypeLink, Linkname: "a"}}}, refused: `entry "b": is a hard link`},
		"block device":     {entries: []ociregistry.Entry{{Header: tar.Header{Name: "sda", Typeflag: tar.TypeBlock}}}, refused: `entry "sda": is a block device`},
		"fifo":             {entries: []ociregistry.Entry{{Header: tar.Header{Name: "f", Typeflag: tar.TypeFifo}}}, refused: `entry "f": is a FIFO`},
		"twice":            {entries: []ociregistry.Entry{reg("a", "1"), reg("a", "2")}, refused: `entry "a": appears twice`},
		"over size":        {entries: []ociregistry.Entry{reg("a", "123456"), reg("b", "123456")}, opts: ExtractOptions{Limits: small}, refused: `entry "b": the artifact's files are over the 10-byte limit`},
		"too many entries": {entries: []ociregistry.Entry{reg("a", ""), reg("b", ""), reg("c", ""), reg("d", "")}, opts: ExtractOptions{Limits: small}, refused: `entry "d": the artifact has more than 3 entries`},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			blob, err := ociregistry.TarGz(tc.entries)
			if err != nil {
				t.Fatal(err)
			}
			if tc.opts.Limits == (ExtractLimits{}) {
				tc.opts.Limits = DefaultExtractLimits
			}
			parent := t.TempDir()
			root := filepath.Join(parent, "root")
			if err := os.Mkdir(root, 0o755); err != nil {
				t.Fatal(err)
			}
			err = extractTarGz(bytes.NewReader(blob), root, tc.opts)
			if tc.refused != "" {
				var ae *ArchiveError
				if !errors.As(err, &ae) || !strings.Contains(err.Error(), tc.refused) {
					t.Fatalf("extract error = %v, want an *ArchiveError saying %q", err, tc.refused)
				}
				if left, _ := os.ReadDir(parent); len(left) != 1 {
					t.Errorf("the refused archive wrote %d entries beside root", len(left)-1)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if diff := cmp.Diff(tc.want, readTree(t, root)); diff != "" {
				t.Errorf("extracted (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExtractCompressedLimit: a stream longer than the compressed limit
// is refused while it is read (a gzip bomb's input is bounded too).
func TestExtractCompressedLimit(t *testing.T) {
	blob, err := ociregistry.TarGz([]ociregistry.Entry{reg("a", strings.Repeat("x", 4096))})
	if err != nil {
		t.Fatal(err)
	}
	err = extractTarGz(bytes.NewReader(blob), t.TempDir(), ExtractOptions{Limits: ExtractLimits{Compressed: 20, Size: 1 << 20, Files: 10}})
	var ae *ArchiveError
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "over the 20-byte limit") {
		t.Errorf("extract error = %v, want the compressed limit named", err)
	}
	err = extractTarGz(strings.NewReader("not gzip"), t.TempDir(), ExtractOptions{Limits: DefaultExtractLimits})
	if !errors.As(err, &ae) || !strings.Contains(err.Error(), "not gzip-compressed") {
		t.Errorf("extract error = %v, want not gzip-compressed", err)
	}
}

// TestPlainHTTPGuard: plain HTTP goes to loopback, or anywhere with
// insecure; elsewhere it is refused before anything is sent.
func TestPlainHTTPGuard(t *testing.T) {
	tests := map[string]struct {
		url     string
		allowed bool
		sent    bool
	}{
		"loopback http":            {url: "http://127.0.0.1:5000/v2/", sent: true},
		"localhost http":           {url: "http://localhost:5000/v2/", sent: true},
		"private range http":       {url: "http://10.1.2.3/v2/"},
		"public http":              {url: "http://registry.example.com/v2/"},
		"private range, insecure":  {url: "http://10.1.2.3/v2/", allowed: true, sent: true},
		"https is not the guard's": {url: "https://registry.example.com/v2/", sent: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			sent := false
			g := &plainHTTPGuard{allowed: tc.allowed, next: roundTripFunc(func(*http.Request) (*http.Response, error) {
				sent = true
				return nil, errors.New("not sent in tests")
			})}
			req, _ := http.NewRequest(http.MethodGet, tc.url, nil)
			_, err := g.RoundTrip(req)
			if sent != tc.sent {
				t.Errorf("sent = %v, want %v (err %v)", sent, tc.sent, err)
			}
			if !tc.sent && !errors.Is(err, errPlainHTTP) {
				t.Errorf("err = %v, want errPlainHTTP", err)
			}
		})
	}
}

type roundTripFunc func(*http.Request) (*http.Response, error)

func (f roundTripFunc) RoundTrip(r *http.Request) (*http.Response, error) { return f(r) }
