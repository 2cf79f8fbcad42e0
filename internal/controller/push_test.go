package controller

import (
	"crypto/hmac"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	"github.com/prometheus/client_golang/prometheus"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/webhook"
)

// pushSecret is the push webhook secret of the tests.
const pushSecret = "push-s3cret"

// pushHook is a push webhook handler whose only poller is a controller.
type pushHook struct {
	t   *testing.T
	h   *webhook.Handler
	reg *prometheus.Registry
}

func newPushHook(t *testing.T, c *Controller) *pushHook {
	reg := prometheus.NewRegistry()
	h := webhook.NewHandler(func() ([]byte, error) { return []byte(pushSecret), nil }, []webhook.Poller{c}, reg)
	return &pushHook{t: t, h: h, reg: reg}
}

// push delivers GitHub's push of ref to sha in repoURL, signed, and
// checks that it is answered 202 with want.
func (p *pushHook) push(repoURL, ref, sha, want string) {
	p.t.Helper()
	body := fmt.Sprintf(`{"ref":%q,"after":%q,"repository":{"clone_url":%q}}`, ref, sha, repoURL)
	mac := hmac.New(sha256.New, []byte(pushSecret))
	mac.Write([]byte(body))
	req := httptest.NewRequest(http.MethodPost, "/webhook/github", strings.NewReader(body))
	req.Header.Set("X-GitHub-Event", "push")
	req.Header.Set("X-GitHub-Delivery", fmt.Sprintf("%s-%d", ref, time.Now().UnixNano()))
	req.Header.Set("X-Hub-Signature-256", "sha256="+hex.EncodeToString(mac.Sum(nil)))
	w := httptest.NewRecorder()
	p.h.ServeHTTP(w, req)
	if w.Code != http.StatusAccepted || w.Body.String() != want+"\n" {
		p.t.Fatalf("push of %s: %d %q, want 202 %q", ref, w.Code, w.Body, want)
	}
}

// counted is syncd_webhook_requests_total of GitHub's result.
func (p *pushHook) counted(result string) float64 {
	mfs, err := p.reg.Gather()
	if err != nil {
		p.t.Fatal(err)
	}
	for _, mf := range mfs {
		for _, m := range mf.GetMetric() {
			labels := map[string]string{}
			for _, l := range m.GetLabel() {
				labels[l.GetName()] = l.GetValue()
			}
			if labels["provider"] == "github" && labels["result"] == result {
				return m.GetCounter().GetValue()
			}
		}
	}
	return 0
}

// listed is how a push sees a source: its name, URL and followed ref.
type listed struct{ Name, URL, Ref string }

func listedOf(srcs []config.Source) []listed {
	var out []listed
	for _, s := range srcs {
		kind, value := s.Git.Ref()
		out = append(out, listed{Name: s.Name, URL: s.Git.URL, Ref: string(kind) + " " + value})
	}
	return out
}

// TestPushPollsGitSource: a signed push of the branch a GitSource
// follows makes its App apply the pushed commit at once, although the
// GitSource polls hourly; a push of another branch polls nothing: the
// Git server sees no request of it, and the App reconciles once for the
// push of main. The rig's GitSource, which no App uses, is not listed.
// Once the controller stops (a lost Lease) it lists no GitSource and
// polls none.
func TestPushPollsGitSource(t *testing.T) {
	r := newRig(t, "1h")
	r.useOwnRepo()
	r.create("gitsources", fmt.Sprintf(`
kind: GitSource
metadata: {name: pushed}
spec: {url: %q, branch: main, interval: 1h}`, r.repo.URL))
	r.create("apps", `
kind: App
metadata: {name: web}
spec: {sourceRef: {kind: GitSource, name: pushed}, path: web}`)
	r.waitReady("web", r.sha)
	hook := newPushHook(t, r.c)
	name := "GitSource " + r.ns + "/pushed"
	if diff := cmp.Diff([]listed{{Name: name, URL: r.repo.URL, Ref: "branch main"}}, r.listed()); diff != "" {
		t.Errorf("Sources of the test's namespace (-want +got):\n%s", diff)
	}

	reconciles, requests := r.c.Reconciles(r.ns, "web"), r.srv.Requests()
	feature := r.commit("feature", "web", "feature")
	hook.push(r.repo.URL, "refs/heads/feature", feature,
		fmt.Sprintf(`ignored: no source follows "refs/heads/feature" of %q`, repositoryName(t, r.repo.URL)))
	next := r.commit("main", "web", "2")
	hook.push(r.repo.URL, "refs/heads/main", next, "polling "+name)
	r.waitReady("web", next)
	if got := r.c.Reconciles(r.ns, "web") - reconciles; got != 1 {
		t.Errorf("App web reconciled %d times after the pushes, want 1 (the push of main)", got)
	}
	afterFeature := r.srv.Requests() - requests

	// The same push of main alone, to compare: the push of feature made
	// no request of its own.
	requests = r.srv.Requests()
	again := r.commit("main", "web", "3")
	hook.push(r.repo.URL, "refs/heads/main", again, "polling "+name)
	r.waitReady("web", again)
	if alone := r.srv.Requests() - requests; afterFeature != alone {
		t.Errorf("the Git server saw %d requests for a push of feature and one of main, %d for a push of main alone: the push of feature polled", afterFeature, alone)
	}
	if v, err := r.configMapValue("web"); err != nil || v != "3" {
		t.Errorf("ConfigMap web: value %q, %v; want 3", v, err)
	}
	for result, want := range map[string]float64{"triggered": 2, "ignored": 1} {
		if got := hook.counted(result); got != want {
			t.Errorf("syncd_webhook_requests_total{provider=github,result=%s} = %v, want %v", result, got, want)
		}
	}

	r.stop()
	if got := r.c.Sources(); len(got) != 0 {
		t.Errorf("a stopped controller lists %v", listedOf(got))
	}
	if err := r.c.Trigger(name); err == nil {
		t.Errorf("a stopped controller polled %s", name)
	}
}

// useOwnRepo makes the rig's repository one named after its namespace,
// with the first commit of the rig's: the controller sees every
// namespace, and a push's match ignores the port, so the other tests'
// GitSources of their "team" repository would match a push of "team".
func (r *rig) useOwnRepo() {
	r.t.Helper()
	repo, err := r.srv.NewRepo(r.ns, r.t.TempDir())
	if err != nil {
		r.t.Fatal(err)
	}
	r.repo = repo
	if r.sha, err = repo.Commit("first", map[string][]byte{"web/cm.yaml": []byte(configMap("web", "1"))}); err != nil {
		r.t.Fatal(err)
	}
}

// listed is what the controller lists of the rig's namespace.
func (r *rig) listed() []listed {
	var own []config.Source
	for _, s := range r.c.Sources() {
		if strings.HasPrefix(s.Name, "GitSource "+r.ns+"/") {
			own = append(own, s)
		}
	}
	return listedOf(own)
}

// repositoryName is how a push's answer names the repository of a
// loopback URL: host without port, path without ".git".
func repositoryName(t *testing.T, raw string) string {
	u, err := url.Parse(raw)
	if err != nil {
		t.Fatal(err)
	}
	return u.Hostname() + strings.TrimSuffix(u.Path, ".git")
}

// commit commits the ConfigMap of dir with value on branch (made from
// main when new) and returns its SHA; the work tree is back on main.
func (r *rig) commit(branch, dir, value string) string {
	r.t.Helper()
	if branch != "main" {
		if out, err := r.repo.Git("checkout", "-q", "-B", branch); err != nil {
			r.t.Fatalf("git checkout -B %s: %v\n%s", branch, err, out)
		}
		defer func() {
			if out, err := r.repo.Git("checkout", "-q", "main"); err != nil {
				r.t.Fatalf("git checkout main: %v\n%s", err, out)
			}
		}()
	}
	sha, err := r.repo.Commit(dir+" "+value, map[string][]byte{dir + "/cm.yaml": []byte(configMap(dir, value))})
	if err != nil {
		r.t.Fatal(err)
	}
	return sha
}

// TestRunsHere: a push polls the GitSource of an App only where a
// reconcile of the App would poll it: in this replica's shard, not
// suspended, not being deleted, and its reference allowed.
func TestRunsHere(t *testing.T) {
	app := func(mutate func(*v1alpha1.App)) *v1alpha1.App {
		a := &v1alpha1.App{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "web"},
			Spec: v1alpha1.AppSpec{SourceRef: v1alpha1.SourceReference{Kind: v1alpha1.KindGitSource, Name: "repo"}}}
		if mutate != nil {
			mutate(a)
		}
		return a
	}
	otherNamespace := func(a *v1alpha1.App) { a.Spec.SourceRef.Namespace = "platform" }
	now := metav1.Now()
	tests := map[string]struct {
		opts Options
		app  *v1alpha1.App
		want bool
	}{
		"an App of this replica":          {app: app(nil), want: true},
		"in this shard":                   {opts: Options{InShard: func(string) bool { return true }}, app: app(nil), want: true},
		"in another shard":                {opts: Options{InShard: func(string) bool { return false }}, app: app(nil)},
		"suspended":                       {app: app(func(a *v1alpha1.App) { a.Spec.Suspend = true })},
		"being deleted":                   {app: app(func(a *v1alpha1.App) { a.DeletionTimestamp = &now })},
		"another namespace's GitSource":   {app: app(otherNamespace)},
		"another namespace's, allowed":    {opts: Options{Tenancy: Tenancy{CrossNamespaceSources: true}}, app: app(otherNamespace), want: true},
		"its own namespace's, by name":    {app: app(func(a *v1alpha1.App) { a.Spec.SourceRef.Namespace = "team-a" }), want: true},
		"the shard is the App's app name": {opts: Options{InShard: func(n string) bool { return n == AppName("team-a", "web") }}, app: app(nil), want: true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			c := &Controller{opts: tc.opts}
			if got := c.runsHere(tc.app); got != tc.want {
				t.Errorf("runsHere = %v, want %v", got, tc.want)
			}
		})
	}
}
