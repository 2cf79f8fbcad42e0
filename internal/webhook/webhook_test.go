package webhook

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

type recorder struct{ triggered []string }

func (r *recorder) Trigger(name string) error {
	r.triggered = append(r.triggered, name)
	return nil
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
	gitlab := `{"object_kind":"push","project":{"git_http_url":"https://gitlab.example.com/team/cfg.git"}}`
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
			rec := &recorder{}
			reg := prometheus.NewRegistry()
			h := NewHandler(func() ([]byte, error) { return []byte(secret), nil }, func() map[string]string {
				return map[string]string{"app": "ssh://git@git.example.com/org/app", "cfg": "https://gitlab.example.com/team/cfg"}
			}, rec, reg)
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
