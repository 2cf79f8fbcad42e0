package webhook

import (
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"
)

const eventSecret = "s3cret"

// What the providers send, cut to the fields syncd reads and a few it
// does not. GitHub's ping to a repository hook names the repository;
// its ping to an organization hook does not.
const (
	githubPing    = `{"zen":"Design for failure.","hook_id":42,"hook":{"type":"Repository","id":42,"events":["push"],"config":{"content_type":"json","url":"https://syncd.example.com/webhook/github"}},"repository":{"clone_url":"https://git.example.com/org/app.git"}}`
	githubOrgPing = `{"zen":"Design for failure.","hook_id":43,"hook":{"type":"Organization","id":43},"organization":{"login":"org"}}`
	githubPR      = `{"action":"opened","number":7,"pull_request":{"head":{"ref":"feature"}},"repository":{"clone_url":"https://git.example.com/org/app.git"}}`
	githubCreate  = `{"ref":"v1.2.0","ref_type":"tag","repository":{"clone_url":"https://git.example.com/org/app.git"}}`
	githubIssue   = `{"action":"opened","issue":{"number":8},"repository":{"clone_url":"https://git.example.com/org/app.git"}}`
	giteaPush     = `{"secret":"","ref":"refs/heads/main","before":"0000","after":"bffe","repository":{"clone_url":"https://git.example.com/org/app.git","ssh_url":"git@git.example.com:org/app.git"}}`
	giteaPR       = `{"action":"opened","number":3,"pull_request":{"head":{"ref":"feature"}},"repository":{"clone_url":"https://git.example.com/org/app.git"}}`
	gitlabMR      = `{"object_kind":"merge_request","event_type":"merge_request","project":{"git_http_url":"https://gitlab.example.com/team/cfg.git"},"object_attributes":{"source_branch":"feature","target_branch":"main"}}`
	gitlabIssue   = `{"object_kind":"issue","event_type":"issue","project":{"git_http_url":"https://gitlab.example.com/team/cfg.git"}}`
	gitlabPush    = `{"object_kind":"push","event_name":"push","ref":"refs/heads/main","project":{"git_http_url":"https://gitlab.example.com/team/cfg.git"}}`
	gitlabProject = `{"event_name":"project_create","name":"cfg","path_with_namespace":"team/cfg"}`
)

// githubHeaders are a GitHub delivery's headers for event and body.
func githubHeaders(event, body string) map[string]string {
	return map[string]string{"X-GitHub-Event": event, "X-Hub-Signature-256": "sha256=" + sign(eventSecret, body)}
}

// giteaHeaders are a Gitea delivery's: its own event header, Gogs' and
// GitHub's, and its signature.
func giteaHeaders(event, body string) map[string]string {
	return map[string]string{"X-Gitea-Event": event, "X-Gogs-Event": event, "X-GitHub-Event": event, "X-Gitea-Signature": sign(eventSecret, body)}
}

// gitlabHeaders are a GitLab delivery's.
func gitlabHeaders(event string) map[string]string {
	return map[string]string{"X-Gitlab-Event": event, "X-Gitlab-Token": eventSecret}
}

// post sends body to the handler's provider path with headers.
func post(h *Handler, provider, body string, headers map[string]string) *httptest.ResponseRecorder {
	req := httptest.NewRequest(http.MethodPost, "/webhook/"+provider, strings.NewReader(body))
	for k, v := range headers {
		req.Header.Set(k, v)
	}
	w := httptest.NewRecorder()
	h.ServeHTTP(w, req)
	return w
}

// TestHandlerEvents: GitHub's ping and every event other than a push,
// correctly authenticated, answer 200, poll nothing and are counted as
// such; a ping without the right signature is still 401; a test delivery
// (Gitea's is a push) polls; only a body that is not JSON is 400.
func TestHandlerEvents(t *testing.T) {
	tests := map[string]struct {
		provider string
		body     string
		headers  map[string]string
		wantCode int
		wantBody string
		result   string
		want     []string
	}{
		"github ping": {provider: "github", body: githubPing, headers: githubHeaders("ping", githubPing),
			wantCode: 200, wantBody: "ping received: this hook is set up; pushes poll the sources that follow the pushed branch or tag\n", result: "ping"},
		"github ping of an organization hook, no repository": {provider: "github", body: githubOrgPing, headers: githubHeaders("ping", githubOrgPing),
			wantCode: 200, wantBody: "ping received: this hook is set up; pushes poll the sources that follow the pushed branch or tag\n", result: "ping"},
		"github ping, bad signature": {provider: "github", body: githubPing,
			headers: map[string]string{"X-GitHub-Event": "ping", "X-Hub-Signature-256": "sha256=" + sign("wrong", githubPing)}, wantCode: 401, result: "unauthorized"},
		"github ping, unsigned": {provider: "github", body: githubPing, headers: map[string]string{"X-GitHub-Event": "ping"}, wantCode: 401, result: "unauthorized"},
		"github pull_request": {provider: "github", body: githubPR, headers: githubHeaders("pull_request", githubPR),
			wantCode: 200, wantBody: "ignored: \"pull_request\" events do not trigger a poll\n", result: "not_push"},
		"github issues": {provider: "github", body: githubIssue, headers: githubHeaders("issues", githubIssue),
			wantCode: 200, wantBody: "ignored: \"issues\" events do not trigger a poll\n", result: "not_push"},
		"github create of a tag (the push of the tag is its own event)": {provider: "github", body: githubCreate, headers: githubHeaders("create", githubCreate),
			wantCode: 200, wantBody: "ignored: \"create\" events do not trigger a poll\n", result: "not_push"},
		"github event not JSON": {provider: "github", body: "{nope", headers: githubHeaders("issues", "{nope"), wantCode: 400, result: "bad_request"},
		"github event name escaped and cut": {provider: "github", body: githubIssue, headers: githubHeaders("<b>\u00e9"+strings.Repeat("x", 100), githubIssue),
			wantCode: 200, wantBody: `ignored: "<b>\u00e9` + strings.Repeat("x", maxEcho-len("<b>\u00e9")) + `..." events do not trigger a poll` + "\n", result: "not_push"},
		"gitea test delivery, a push of the default branch": {provider: "gitea", body: giteaPush, headers: giteaHeaders("push", giteaPush),
			wantCode: 202, wantBody: "polling app\n", result: "triggered", want: []string{"app"}},
		"gitea pull_request": {provider: "gitea", body: giteaPR, headers: giteaHeaders("pull_request", giteaPR),
			wantCode: 200, wantBody: "ignored: \"pull_request\" events do not trigger a poll\n", result: "not_push"},
		"gitea issues": {provider: "gitea", body: githubIssue, headers: giteaHeaders("issues", githubIssue),
			wantCode: 200, wantBody: "ignored: \"issues\" events do not trigger a poll\n", result: "not_push"},
		"gitea event read from X-Gitea-Event first": {provider: "gitea", body: giteaPR,
			headers:  map[string]string{"X-Gitea-Event": "pull_request", "X-GitHub-Event": "push", "X-Gitea-Signature": sign(eventSecret, giteaPR)},
			wantCode: 200, wantBody: "ignored: \"pull_request\" events do not trigger a poll\n", result: "not_push"},
		"gitea pull_request, bad signature": {provider: "gitea", body: giteaPR,
			headers: map[string]string{"X-Gitea-Event": "pull_request", "X-Gitea-Signature": sign("wrong", giteaPR)}, wantCode: 401, result: "unauthorized"},
		"gitlab merge request": {provider: "gitlab", body: gitlabMR, headers: gitlabHeaders("Merge Request Hook"),
			wantCode: 200, wantBody: "ignored: \"Merge Request Hook\" events do not trigger a poll\n", result: "not_push"},
		"gitlab issue": {provider: "gitlab", body: gitlabIssue, headers: gitlabHeaders("Issue Hook"),
			wantCode: 200, wantBody: "ignored: \"Issue Hook\" events do not trigger a poll\n", result: "not_push"},
		"gitlab merge request, wrong token": {provider: "gitlab", body: gitlabMR,
			headers: map[string]string{"X-Gitlab-Event": "Merge Request Hook", "X-Gitlab-Token": "nope"}, wantCode: 401, result: "unauthorized"},
		"gitlab test of push events": {provider: "gitlab", body: gitlabPush, headers: gitlabHeaders("Push Hook"),
			wantCode: 202, wantBody: "polling cfg\n", result: "triggered", want: []string{"cfg"}},
		"gitlab system hook, a push": {provider: "gitlab", body: gitlabPush, headers: gitlabHeaders("System Hook"),
			wantCode: 202, wantBody: "polling cfg\n", result: "triggered", want: []string{"cfg"}},
		"gitlab system hook, a project created": {provider: "gitlab", body: gitlabProject, headers: gitlabHeaders("System Hook"),
			wantCode: 200, wantBody: "ignored: \"System Hook project_create\" events do not trigger a poll\n", result: "not_push"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			rec := pollerOf(
				onBranch("app", "https://git.example.com/org/app", "main"),
				onBranch("cfg", "https://gitlab.example.com/team/cfg", "main"),
			)
			h := NewHandler(func() ([]byte, error) { return []byte(eventSecret), nil }, []Poller{rec}, prometheus.NewRegistry())
			w := post(h, tc.provider, tc.body, tc.headers)
			if w.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.wantCode, w.Body)
			}
			if tc.wantBody != "" {
				if diff := cmp.Diff(tc.wantBody, w.Body.String()); diff != "" {
					t.Errorf("answer (-want +got):\n%s", diff)
				}
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
