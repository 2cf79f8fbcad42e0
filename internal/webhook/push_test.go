package webhook

import (
	"errors"
	"net/http"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/testutil"

	"syncd.dev/syncd/internal/config"
)

const (
	appRepo   = "https://git.example.com/org/app.git"
	otherRepo = "https://git.example.com/org/other.git"
	pinned    = "0123456789abcdef0123456789abcdef01234567"
)

// followers are one repository's sources following each kind of
// revision, a source of another repository and a Helm repository
// whose URL names the same host and path.
var followers = []config.Source{
	onBranch("main", appRepo, "main"),
	onBranch("dev", "git@git.example.com:org/app.git", "dev"),
	gitSource("ranged", appRepo, config.GitRef{Semver: ">=1.0.0 <2.0.0"}),
	gitSource("tagged", appRepo, config.GitRef{Tag: "v1.2.0"}),
	gitSource("pinned", appRepo, config.GitRef{Commit: pinned}),
	onBranch("other", otherRepo, "main"),
	{Name: "charts", Helm: &config.HelmSource{URL: "https://git.example.com/org/app"}},
}

// TestMatchPush: a push polls the sources of its repository that follow
// the pushed branch, its tag, or any tag for a semver range; never a
// pinned commit, a source of another repository or a Helm source.
func TestMatchPush(t *testing.T) {
	tests := map[string]struct {
		urls []string
		ref  string
		want pushMatch
	}{
		"the followed branch":              {urls: []string{appRepo}, ref: "refs/heads/main", want: pushMatch{ofRepository: 5, poll: []string{"main"}}},
		"the other followed branch":        {urls: []string{appRepo}, ref: "refs/heads/dev", want: pushMatch{ofRepository: 5, poll: []string{"dev"}}},
		"a branch nobody follows":          {urls: []string{appRepo}, ref: "refs/heads/feature", want: pushMatch{ofRepository: 5}},
		"a branch named like a tag":        {urls: []string{appRepo}, ref: "refs/heads/v1.2.0", want: pushMatch{ofRepository: 5}},
		"a new tag: the semver source":     {urls: []string{appRepo}, ref: "refs/tags/v1.3.0", want: pushMatch{ofRepository: 5, poll: []string{"ranged"}}},
		"the followed tag, re-tagged":      {urls: []string{appRepo}, ref: "refs/tags/v1.2.0", want: pushMatch{ofRepository: 5, poll: []string{"ranged", "tagged"}}},
		"a tag named like a branch":        {urls: []string{appRepo}, ref: "refs/tags/main", want: pushMatch{ofRepository: 5, poll: []string{"ranged"}}},
		"a pull request's ref":             {urls: []string{appRepo}, ref: "refs/pull/7/head", want: pushMatch{ofRepository: 5}},
		"no ref":                           {urls: []string{appRepo}, ref: "", want: pushMatch{ofRepository: 5}},
		"a short branch name is not a ref": {urls: []string{appRepo}, ref: "main", want: pushMatch{ofRepository: 5}},
		"another repository":               {urls: []string{otherRepo}, ref: "refs/heads/main", want: pushMatch{ofRepository: 1, poll: []string{"other"}}},
		"an unknown repository":            {urls: []string{"https://git.example.com/org/none.git"}, ref: "refs/heads/main", want: pushMatch{}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			got := matchPush(followers, tc.urls, parseRef(tc.ref))
			if diff := cmp.Diff(tc.want, got, cmp.AllowUnexported(pushMatch{})); diff != "" {
				t.Errorf("matchPush(%q) (-want +got):\n%s", tc.ref, diff)
			}
		})
	}
}

// TestHandlerPushRefs: through the handler, each provider's push polls
// only the sources following the pushed ref, and a push that concerns
// none is answered 202, says why, and polls nothing.
func TestHandlerPushRefs(t *testing.T) {
	githubPush := func(ref string) string {
		return `{"ref":"` + ref + `","repository":{"clone_url":"https://git.example.com/org/app.git","ssh_url":"git@git.example.com:org/app.git"}}`
	}
	gitlabPush := func(ref string) string {
		return `{"object_kind":"tag_push","ref":"` + ref + `","project":{"git_http_url":"https://git.example.com/org/app.git"}}`
	}
	tests := map[string]struct {
		provider string
		sources  []config.Source
		body     string
		headers  map[string]string
		wantCode int
		wantBody string
		result   string
		want     []string
	}{
		"github push of the followed branch": {provider: "github", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: githubPush("refs/heads/main"), wantCode: 202, wantBody: "polling app\n", result: "triggered", want: []string{"app"}},
		"github push of another branch": {provider: "github", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: githubPush("refs/heads/feature"), wantCode: 202,
			wantBody: `ignored: no source follows "refs/heads/feature" of "git.example.com/org/app"` + "\n", result: "ignored"},
		"github push of a tag, semver source": {provider: "github", sources: []config.Source{onBranch("app", appRepo, "main"), gitSource("releases", appRepo, config.GitRef{Semver: "^1"})},
			body: githubPush("refs/tags/v1.4.0"), wantCode: 202, wantBody: "polling releases\n", result: "triggered", want: []string{"releases"}},
		"github push of a tag, branch source only": {provider: "github", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: githubPush("refs/tags/v1.4.0"), wantCode: 202,
			wantBody: `ignored: no source follows "refs/tags/v1.4.0" of "git.example.com/org/app"` + "\n", result: "ignored"},
		"github push, two sources of the repository on different branches": {provider: "github",
			sources: []config.Source{onBranch("prod", appRepo, "main"), onBranch("staging", "git@git.example.com:org/app.git", "staging")},
			body:    githubPush("refs/heads/staging"), wantCode: 202, wantBody: "polling staging\n", result: "triggered", want: []string{"staging"}},
		"github push, commit-pinned source": {provider: "github", sources: []config.Source{gitSource("app", appRepo, config.GitRef{Commit: pinned})},
			body: githubPush("refs/heads/main"), wantCode: 202,
			wantBody: `ignored: no source follows "refs/heads/main" of "git.example.com/org/app"` + "\n", result: "ignored"},
		"github push, the ref is escaped": {provider: "github", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: githubPush(`refs/heads/<a>\n\u001b`), wantCode: 202,
			wantBody: `ignored: no source follows "refs/heads/<a>\n\x1b" of "git.example.com/org/app"` + "\n", result: "ignored"},
		"github push, credentials in the URL are not shown": {provider: "github", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: `{"ref":"refs/heads/x","repository":{"clone_url":"https://bot:hunter2@git.example.com/org/app.git"}}`, wantCode: 202,
			wantBody: `ignored: no source follows "refs/heads/x" of "git.example.com/org/app"` + "\n", result: "ignored"},
		"github push of an unknown repository": {provider: "github", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: `{"ref":"refs/heads/main","repository":{"clone_url":"https://git.example.com/org/none.git"}}`, wantCode: 202,
			wantBody: "ignored: no source matches the pushed repository\n", result: "ignored"},
		"gitea push of another branch": {provider: "gitea", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: githubPush("refs/heads/feature"), wantCode: 202,
			wantBody: `ignored: no source follows "refs/heads/feature" of "git.example.com/org/app"` + "\n", result: "ignored"},
		"gitlab tag push hook, semver source": {provider: "gitlab", sources: []config.Source{onBranch("app", appRepo, "main"), gitSource("releases", appRepo, config.GitRef{Semver: ">=2.0.0"})},
			body: gitlabPush("refs/tags/v2.1.0"), headers: gitlabHeaders("Tag Push Hook"), wantCode: 202, wantBody: "polling releases\n", result: "triggered", want: []string{"releases"}},
		"gitlab tag push hook, branch source only": {provider: "gitlab", sources: []config.Source{onBranch("app", appRepo, "main")},
			body: gitlabPush("refs/tags/v2.1.0"), headers: gitlabHeaders("Tag Push Hook"), wantCode: 202,
			wantBody: `ignored: no source follows "refs/tags/v2.1.0" of "git.example.com/org/app"` + "\n", result: "ignored"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			headers := tc.headers
			switch tc.provider {
			case "github":
				headers = githubHeaders("push", tc.body)
			case "gitea":
				headers = giteaHeaders("push", tc.body)
			}
			rec := pollerOf(tc.sources...)
			h := NewHandler(func() ([]byte, error) { return []byte(eventSecret), nil }, []Poller{rec}, prometheus.NewRegistry())
			w := post(h, tc.provider, tc.body, headers)
			if w.Code != tc.wantCode {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.wantCode, w.Body)
			}
			if diff := cmp.Diff(tc.wantBody, w.Body.String()); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if strings.Contains(w.Body.String(), "hunter2") {
				t.Errorf("the answer shows the URL's password: %s", w.Body)
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

// TestHandlerPollers: a push is matched with the sources of every
// poller (the daemon's, the App controller's) by the same rule, and each
// source is polled through the poller that listed it; a push that
// polls only one poller's sources counts as triggered, and a poller
// that lists nothing (a standby) adds nothing.
func TestHandlerPollers(t *testing.T) {
	push := func(ref string) string {
		return `{"ref":"` + ref + `","repository":{"clone_url":"https://git.example.com/org/app.git"}}`
	}
	const gitSourceName = "GitSource team-a/app"
	tests := map[string]struct {
		file, objects []config.Source
		refuse        bool // the objects' poller cannot poll now
		ref           string
		wantBody      string
		result        string
		wantFile      []string
		wantObjects   []string
	}{
		"both follow the pushed branch": {
			file: []config.Source{onBranch("app", appRepo, "main")}, objects: []config.Source{onBranch(gitSourceName, appRepo, "main")},
			ref: "refs/heads/main", wantBody: "polling app, " + gitSourceName + "\n", result: "triggered",
			wantFile: []string{"app"}, wantObjects: []string{gitSourceName}},
		"only the GitSource follows the pushed branch": {
			file: []config.Source{onBranch("app", appRepo, "main")}, objects: []config.Source{onBranch(gitSourceName, appRepo, "release")},
			ref: "refs/heads/release", wantBody: "polling " + gitSourceName + "\n", result: "triggered", wantObjects: []string{gitSourceName}},
		"only GitSources, a new tag for a semver one": {
			objects: []config.Source{onBranch(gitSourceName, appRepo, "main"), gitSource("GitSource team-b/releases", appRepo, config.GitRef{Semver: "^1"})},
			ref:     "refs/tags/v1.1.0", wantBody: "polling GitSource team-b/releases\n", result: "triggered", wantObjects: []string{"GitSource team-b/releases"}},
		"a name both pollers list is polled by each": {
			file: []config.Source{onBranch("app", appRepo, "main")}, objects: []config.Source{onBranch("app", appRepo, "main")},
			ref: "refs/heads/main", wantBody: "polling app, app\n", result: "triggered", wantFile: []string{"app"}, wantObjects: []string{"app"}},
		"the GitSource follows another branch": {
			objects: []config.Source{onBranch(gitSourceName, appRepo, "main")},
			ref:     "refs/heads/feature", wantBody: `ignored: no source follows "refs/heads/feature" of "git.example.com/org/app"` + "\n", result: "ignored"},
		"a standby: neither poller lists a source": {
			ref: "refs/heads/main", wantBody: "ignored: no source matches the pushed repository\n", result: "ignored"},
		"the GitSources' poller cannot poll now": {
			objects: []config.Source{onBranch(gitSourceName, appRepo, "main")}, refuse: true,
			ref: "refs/heads/main", wantBody: "ignored: no source could be polled now; their next poll picks the push up\n", result: "ignored"},
		"the GitSources' poller cannot poll now, the file's can": {
			file: []config.Source{onBranch("app", appRepo, "main")}, objects: []config.Source{onBranch(gitSourceName, appRepo, "main")}, refuse: true,
			ref: "refs/heads/main", wantBody: "polling app\n", result: "triggered", wantFile: []string{"app"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			file, objects := pollerOf(tc.file...), pollerOf(tc.objects...)
			if tc.refuse {
				objects.refuse = errors.New("not running")
			}
			h := NewHandler(func() ([]byte, error) { return []byte(eventSecret), nil }, []Poller{file, objects}, prometheus.NewRegistry())
			body := push(tc.ref)
			w := post(h, "github", body, githubHeaders("push", body))
			if w.Code != http.StatusAccepted {
				t.Fatalf("code %d, want 202: %s", w.Code, w.Body)
			}
			if diff := cmp.Diff(tc.wantBody, w.Body.String()); diff != "" {
				t.Errorf("answer (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantFile, file.triggered); diff != "" {
				t.Errorf("the file's sources polled (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.wantObjects, objects.triggered); diff != "" {
				t.Errorf("the GitSources polled (-want +got):\n%s", diff)
			}
			if got := testutil.ToFloat64(h.received.WithLabelValues("github", tc.result)); got != 1 {
				t.Errorf("syncd_webhook_requests_total{provider=github,result=%q} = %v, want 1", tc.result, got)
			}
		})
	}
}
