package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"io"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"syncd.dev/syncd/internal/config"
)

// recorder is a Poller of sources that records what it is asked to
// poll.
type recorder struct {
	sources   []config.Source
	triggered []string
	// refuse, when set, is every Trigger's error (a poller that cannot
	// poll now).
	refuse error
}

var _ Poller = (*recorder)(nil)

// pollerOf is a recorder of srcs.
func pollerOf(srcs ...config.Source) *recorder { return &recorder{sources: srcs} }

func (r *recorder) Sources() []config.Source { return r.sources }

func (r *recorder) Trigger(name string) error {
	if r.refuse != nil {
		return r.refuse
	}
	r.triggered = append(r.triggered, name)
	return nil
}

// gitSource is a Git source of url following ref.
func gitSource(name, url string, ref config.GitRef) config.Source {
	return config.Source{Name: name, Git: config.GitSource{URL: url, GitRef: ref}}
}

// onBranch is a Git source of url following branch.
func onBranch(name, url, branch string) config.Source {
	return gitSource(name, url, config.GitRef{Branch: branch})
}

// sign computes the GitHub/Gitea signature independently of verify.
func sign(secret, body string) string {
	m := hmac.New(sha256.New, []byte(secret))
	m.Write([]byte(body))
	return hex.EncodeToString(m.Sum(nil))
}

func TestHandler(t *testing.T) {
	const secret = "s3cret"
	push := `{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example.com/org/app.git","ssh_url":"git@git.example.com:org/app.git"}}`
	gitlab := `{"object_kind":"push","ref":"refs/heads/main","project":{"git_http_url":"https://gitlab.example.com/team/cfg.git"}}`
	tests := map[string]struct {
		provider string
		body     string
		headers  map[string]string
		wantCode int
		want     []string
		result   string
	}{
		"github signed":        {provider: "github", body: push, headers: map[string]string{"X-Hub-Signature-256": "sha256=" + sign(secret, push)}, wantCode: 202, want: []string{"app"}, result: "triggered"},
		"github bad signature": {provider: "github", body: push, headers: map[string]string{"X-Hub-Signature-256": "sha256=" + sign("wrong", push)}, wantCode: 401, result: "unauthorized"},
		"github unsigned":      {provider: "github", body: push, wantCode: 401, result: "unauthorized"},
		"gitea signed":         {provider: "gitea", body: push, headers: map[string]string{"X-Gitea-Signature": sign(secret, push)}, wantCode: 202, want: []string{"app"}, result: "triggered"},
		"gitlab token":         {provider: "gitlab", body: gitlab, headers: map[string]string{"X-Gitlab-Token": secret}, wantCode: 202, want: []string{"cfg"}, result: "triggered"},
		"gitlab wrong token":   {provider: "gitlab", body: gitlab, headers: map[string]string{"X-Gitlab-Token": "nope"}, wantCode: 401, result: "unauthorized"},
		"no matching source": {provider: "github", body: `{"repository":{"clone_url":"https://git.example.com/org/other.git"}}`,
			headers: map[string]string{"X-Hub-Signature-256": "sha256=" + sign(secret, `{"repository":{"clone_url":"https://git.example.com/org/other.git"}}`)}, wantCode: 202, result: "ignored"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := pollerOf(
				onBranch("app", "ssh://git@git.example.com/org/app", "main"),
				onBranch("cfg", "https://gitlab.example.com/team/cfg", "main"),
			)
			h := NewHandler(func() ([]byte, error) { return []byte(secret), nil }, []Poller{rec}, prometheus.NewRegistry())
			req := httptest.NewRequest(http.MethodPost, "/webhook/"+tc.provider, strings.NewReader(tc.body))
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.wantCode, w.Body)
			}
			if diff := cmp.Diff(tc.want, rec.triggered); diff != "" {
				t.Errorf("triggered (-want +got):\n%s", diff)
			}
			if got := testutil.ToFloat64(h.received.WithLabelValues(tc.provider, tc.result)); got != 1 {
				t.Errorf("syncd_webhook_requests_total{provider=%q,result=%q} = %v, want 1", tc.provider, tc.result, got)
			}
		})
	}
}

// countingBody is a request body of n bytes ("{" then spaces: never valid
// JSON) that records how much of it the handler read.
type countingBody struct {
	left, read int
}

func (b *countingBody) Read(p []byte) (int, error) {
	if b.left == 0 {
		return 0, io.EOF
	}
	n := min(len(p), b.left)
	for i := range n {
		p[i] = ' '
	}
	if b.read == 0 {
		p[0] = '{'
	}
	b.left -= n
	b.read += n
	return n, nil
}

// signedBody returns the X-Hub-Signature-256 of countingBody's n bytes.
func signedBody(secret string, n int) string {
	b := &countingBody{left: n}
	data, _ := io.ReadAll(b)
	return "sha256=" + sign(secret, string(data))
}

// TestHandlerReadsBodyLast checks the order of the checks with bodies that
// are not JSON: a handler that parsed first would answer 400, one that
// read an unsigned body would show bytes read.
func TestHandlerReadsBodyLast(t *testing.T) {
	const secret, limit = "s3cret", 1024
	tests := map[string]struct {
		provider      string
		size          int
		declareLength bool // Content-Length set (else chunked, length unknown)
		headers       map[string]string
		wantCode      int
		result        string
		wantReadMax   int
	}{
		"unsigned: 401, body not read": {provider: "github", size: 10 * limit,
			wantCode: 401, result: "unauthorized", wantReadMax: 0},
		"malformed signature: 401, body not read": {provider: "github", size: 100, headers: map[string]string{"X-Hub-Signature-256": "sha256=zz"},
			wantCode: 401, result: "unauthorized", wantReadMax: 0},
		"wrong GitLab token: 401, body not read": {provider: "gitlab", size: 10 * limit, headers: map[string]string{"X-Gitlab-Token": "nope"},
			wantCode: 401, result: "unauthorized", wantReadMax: 0},
		"declared over the limit: 413, body not read": {provider: "github", size: limit + 1, declareLength: true,
			headers: map[string]string{"X-Hub-Signature-256": signedBody(secret, limit+1)}, wantCode: 413, result: "too_large", wantReadMax: 0},
		"chunked over the limit, validly signed: 413 after limit bytes, never parsed": {provider: "github", size: 100 * limit,
			headers: map[string]string{"X-Hub-Signature-256": signedBody(secret, 100*limit)}, wantCode: 413, result: "too_large", wantReadMax: limit + 1},
		"bad signature on a non-JSON body: 401, never parsed": {provider: "github", size: 100,
			headers: map[string]string{"X-Hub-Signature-256": signedBody("wrong", 100)}, wantCode: 401, result: "unauthorized", wantReadMax: 100},
		"signed non-JSON body at the limit: parsed, 400": {provider: "github", size: limit,
			headers: map[string]string{"X-Hub-Signature-256": signedBody(secret, limit)}, wantCode: 400, result: "bad_request", wantReadMax: limit},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := pollerOf()
			h := NewHandler(func() ([]byte, error) { return []byte(secret), nil }, []Poller{rec}, prometheus.NewRegistry())
			h.MaxBody = limit
			body := &countingBody{left: tc.size}
			req := httptest.NewRequest(http.MethodPost, "/webhook/"+tc.provider, body)
			req.ContentLength = -1
			if tc.declareLength {
				req.ContentLength = int64(tc.size)
			}
			for k, v := range tc.headers {
				req.Header.Set(k, v)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.wantCode {
				t.Errorf("code %d, want %d: %s", w.Code, tc.wantCode, w.Body)
			}
			if body.read > tc.wantReadMax {
				t.Errorf("read %d bytes of the body, want at most %d", body.read, tc.wantReadMax)
			}
			if got := testutil.ToFloat64(h.received.WithLabelValues(tc.provider, tc.result)); got != 1 {
				t.Errorf("syncd_webhook_requests_total{provider=%q,result=%q} = %v, want 1", tc.provider, tc.result, got)
			}
		})
	}
}

// TestHandlerUnknownProvider: a path a stranger chose answers 404 and is
// counted under provider "unknown", not as a label value of its own.
func TestHandlerUnknownProvider(t *testing.T) {
	h := NewHandler(func() ([]byte, error) { return []byte("s"), nil }, []Poller{pollerOf()}, prometheus.NewRegistry())
	for _, p := range []string{"bitbucket", "x1", "x2"} {
		w := httptest.NewRecorder()
		h.ServeHTTP(w, httptest.NewRequest(http.MethodPost, "/webhook/"+p, strings.NewReader("{}")))
		if w.Code != http.StatusNotFound {
			t.Errorf("/webhook/%s: code %d, want 404", p, w.Code)
		}
	}
	if got := testutil.CollectAndCount(h.received); got != 1 {
		t.Errorf("%d label sets, want 1 (provider unknown)", got)
	}
	if got := testutil.ToFloat64(h.received.WithLabelValues("unknown", "not_found")); got != 3 {
		t.Errorf("unknown/not_found = %v, want 3", got)
	}
}

func TestSameRepository(t *testing.T) {
	tests := map[string]struct {
		a, b string
		want bool
	}{
		"https vs scp":        {"https://github.com/org/repo.git", "git@github.com:org/repo.git", true},
		"case and slash":      {"https://GitHub.com/Org/Repo/", "https://github.com/org/repo", true},
		"credentials ignored": {"https://user:pw@github.com/org/repo", "https://github.com/org/repo.git", true},
		"other repo":          {"https://github.com/org/repo", "https://github.com/org/repo2", false},
		"other host":          {"https://github.com/org/repo", "https://gitlab.com/org/repo", false},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			if got := SameRepository(tc.a, tc.b); got != tc.want {
				t.Errorf("SameRepository(%q, %q) = %v, want %v", tc.a, tc.b, got, tc.want)
			}
		})
	}
}
