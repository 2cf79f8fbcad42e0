package source

import (
	"context"
	"encoding/base64"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/Masterminds/semver/v3"
	"github.com/google/go-cmp/cmp"
	chart "helm.sh/helm/v4/pkg/chart/v2"

	"syncd.dev/syncd/internal/testenv/helmserver"
)

func webChart(version string) helmserver.Chart {
	return helmserver.Chart{Name: "web", Version: version, Files: map[string]string{
		"values.yaml":           "greeting: hello\n",
		"templates/config.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  version: " + version + "\n",
	}}
}

func startRepo(t *testing.T) *helmserver.Server {
	t.Helper()
	srv := helmserver.Start()
	t.Cleanup(srv.Close)
	return srv
}

func publish(t *testing.T, srv *helmserver.Server, c helmserver.Chart) string {
	t.Helper()
	d, err := srv.Publish(c)
	if err != nil {
		t.Fatal(err)
	}
	return d
}

func newTestHelmRepo(t *testing.T, spec HelmSpec) (*HelmRepo, *HelmRepos) {
	t.Helper()
	rs, err := NewHelmRepos(Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if spec.Name == "" {
		spec.Name = "charts"
	}
	if spec.Interval == 0 {
		spec.Interval = time.Minute
	}
	r, err := rs.Add(spec)
	if err != nil {
		t.Fatal(err)
	}
	return r, rs
}

// paths returns the paths requested, in order.
func paths(reqs []helmserver.Request) []string {
	out := []string{}
	for _, r := range reqs {
		out = append(out, r.Path)
	}
	return out
}

// TestHelmRepoPollCost: the first poll reads index.yaml and downloads the
// archive; a poll of a repository that did not move is one conditional
// request answered 304, no download; a new version in range costs the
// index and that version's archive only.
func TestHelmRepoPollCost(t *testing.T) {
	srv := startRepo(t)
	publish(t, srv, webChart("1.0.0"))
	r, _ := newTestHelmRepo(t, HelmSpec{URL: srv.URL, Charts: []ChartRef{{Chart: "web", Version: "~1.0"}}})
	ctx := context.Background()

	rev, res, err := r.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cr, ok := rev.Chart(ChartRef{Chart: "web", Version: "~1.0"})
	if !ok || cr.Version != "1.0.0" || res.Moved != Updated {
		t.Fatalf("first poll: chart %+v (found %v), moved %v; want 1.0.0, Updated", cr, ok, res.Moved)
	}
	if b, err := os.ReadFile(filepath.Join(cr.ChartDir, "templates", "config.yaml")); err != nil || !strings.Contains(string(b), "version: 1.0.0") {
		t.Fatalf("expanded chart: %q, %v", b, err)
	}
	if diff := cmp.Diff([]string{"/index.yaml", "/charts/web-1.0.0.tgz"}, paths(srv.Requests())); diff != "" {
		t.Errorf("first poll requests (-want +got):\n%s", diff)
	}

	srv.ResetRequests()
	again, res, err := r.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	reqs := srv.Requests()
	if len(reqs) != 1 || reqs[0].Status != http.StatusNotModified || res.Moved != Unchanged || again.SHA != rev.SHA {
		t.Errorf("unchanged poll: requests %+v, moved %v, sha %s (was %s); want one 304, Unchanged, same revision", reqs, res.Moved, again.SHA, rev.SHA)
	}

	publish(t, srv, webChart("1.0.1"))
	publish(t, srv, webChart("2.0.0")) // out of range
	srv.ResetRequests()
	next, res, err := r.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cr, _ = next.Chart(ChartRef{Chart: "web", Version: "~1.0"})
	if cr.Version != "1.0.1" || res.Moved != Updated || res.Previous != rev.SHA {
		t.Errorf("after publishing 1.0.1: version %s, moved %v, previous %s", cr.Version, res.Moved, res.Previous)
	}
	if diff := cmp.Diff([]string{"/index.yaml", "/charts/web-1.0.1.tgz"}, paths(srv.Requests())); diff != "" {
		t.Errorf("poll after a new version (-want +got):\n%s", diff)
	}
	if _, err := r.Hold(rev); err == nil {
		t.Errorf("the old revision's tree can still be held after a newer one is in force and the sweep ran")
	}
}

// TestHelmRepoCacheByDigest: a new HelmRepo on the same cache (a
// restart) reads index.yaml again but takes the archive from the cache;
// an index whose other charts changed resolves to the same revision
// without a download.
func TestHelmRepoCacheByDigest(t *testing.T) {
	srv := startRepo(t)
	publish(t, srv, webChart("1.0.0"))
	cache := t.TempDir()
	spec := HelmSpec{Name: "charts", URL: srv.URL, Interval: time.Minute, Charts: []ChartRef{{Chart: "web"}}}
	poll := func() (Revision, Result) {
		t.Helper()
		rs, err := NewHelmRepos(Options{CacheDir: cache})
		if err != nil {
			t.Fatal(err)
		}
		r, err := rs.Add(spec)
		if err != nil {
			t.Fatal(err)
		}
		rev, res, err := r.Poll(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		return rev, res
	}
	first, _ := poll()
	srv.ResetRequests()
	second, _ := poll()
	if diff := cmp.Diff([]string{"/index.yaml"}, paths(srv.Requests())); diff != "" {
		t.Errorf("poll after a restart (-want +got):\n%s", diff)
	}
	if first.SHA != second.SHA {
		t.Errorf("revision moved across a restart: %s -> %s", first.SHA, second.SHA)
	}

	// Another chart published: the index changes, web does not.
	rs, _ := NewHelmRepos(Options{CacheDir: t.TempDir()})
	r, _ := rs.Add(spec)
	if _, _, err := r.Poll(context.Background()); err != nil {
		t.Fatal(err)
	}
	publish(t, srv, helmserver.Chart{Name: "other", Version: "0.1.0"})
	srv.ResetRequests()
	_, res, err := r.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff([]string{"/index.yaml"}, paths(srv.Requests())); diff != "" || res.Moved != Unchanged {
		t.Errorf("poll after another chart was published: moved %v, requests (-want +got):\n%s", res.Moved, diff)
	}
}

// TestHelmRepoDigestMismatch: an archive whose sha256 is not the one
// index.yaml lists is refused, and nothing is in force.
func TestHelmRepoDigestMismatch(t *testing.T) {
	srv := startRepo(t)
	publish(t, srv, webChart("1.0.0"))
	other, err := helmserver.Package(webChart("9.9.9"))
	if err != nil {
		t.Fatal(err)
	}
	srv.ReplaceArchive("web", "1.0.0", other)
	r, _ := newTestHelmRepo(t, HelmSpec{URL: srv.URL, Charts: []ChartRef{{Chart: "web"}}})
	_, _, err = r.Poll(context.Background())
	var se *Error
	if !errors.As(err, &se) || se.Kind != KindVerification || !strings.Contains(err.Error(), "web 1.0.0") {
		t.Fatalf("poll of a tampered archive: %v; want a %s error naming web 1.0.0", err, KindVerification)
	}
	if _, ok := r.Last(); ok {
		t.Errorf("a revision is in force after a refused archive")
	}
}

// TestHelmRepoErrors: each bad input is an *Error of the right kind that
// names the chart or the source.
func TestHelmRepoErrors(t *testing.T) {
	srv := startRepo(t)
	publish(t, srv, webChart("1.0.0"))
	down := httptest.NewServer(http.NotFoundHandler())
	downURL := down.URL
	down.Close()
	tests := map[string]struct {
		url  string
		ref  ChartRef
		kind Kind
		want []string
	}{
		"missing chart":       {srv.URL, ChartRef{Chart: "nope"}, KindRefNotFound, []string{`chart "nope"`, `source "charts"`}},
		"no matching version": {srv.URL, ChartRef{Chart: "web", Version: ">=2.0.0"}, KindRefNotFound, []string{`chart "web"`, ">=2.0.0", "1.0.0"}},
		"unreachable":         {downURL, ChartRef{Chart: "web"}, KindUnreachable, []string{`source "charts"`, "index.yaml"}},
		"not a repository":    {srv.URL + "/nothing-here", ChartRef{Chart: "web"}, KindRepositoryNotFound, []string{`source "charts"`, "HTTP 404"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r, _ := newTestHelmRepo(t, HelmSpec{URL: tc.url, Charts: []ChartRef{tc.ref}})
			_, _, err := r.Poll(context.Background())
			var se *Error
			if !errors.As(err, &se) || se.Kind != tc.kind {
				t.Fatalf("poll: %v; want kind %s", err, tc.kind)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not mention %q", err, w)
				}
			}
		})
	}
	rs, _ := NewHelmRepos(Options{CacheDir: t.TempDir()})
	if _, err := rs.Add(HelmSpec{Name: "charts", URL: srv.URL, Interval: time.Minute, Charts: []ChartRef{{Chart: "web", Version: "not a range"}}}); err == nil || !strings.Contains(err.Error(), "chart web") {
		t.Errorf("bad version range: %v; want an error naming chart web", err)
	}
}

// TestResolveChart: exact versions, ranges and prereleases as Helm
// resolves them.
func TestResolveChart(t *testing.T) {
	idx := &helmIndex{APIVersion: "v1", Entries: map[string][]*indexEntry{"web": {
		{Name: "web", Version: "1.2.0"}, {Name: "web", Version: "1.10.0"}, {Name: "web", Version: "2.0.0-rc.1"}, {Name: "web", Version: "1.9.3"},
	}}}
	tests := map[string]struct{ version, want string }{
		"latest stable":         {"", "1.10.0"},
		"exact":                 {"1.2.0", "1.2.0"},
		"tilde":                 {"~1.9", "1.9.3"},
		"caret":                 {"^1.2", "1.10.0"},
		"range":                 {">=1.0.0 <1.10.0", "1.9.3"},
		"prerelease when asked": {">=2.0.0-0", "2.0.0-rc.1"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			v := tc.version
			if v == "" {
				v = "*"
			}
			con, err := semver.NewConstraint(v)
			if err != nil {
				t.Fatal(err)
			}
			cv, err := resolveChart(idx, ChartRef{Chart: "web", Version: tc.version}, con, "charts")
			if err != nil {
				t.Fatal(err)
			}
			if cv.Version != tc.want {
				t.Errorf("resolved %q to %s, want %s", tc.version, cv.Version, tc.want)
			}
		})
	}
}

func writeSecret(t *testing.T, content string) string {
	t.Helper()
	f := filepath.Join(t.TempDir(), "secret")
	if err := os.WriteFile(f, []byte(content+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	return f
}

// TestHelmRepoAuth: basic auth and bearer tokens go to the repository's
// host only: not to an archive URL on another host, not through a
// redirect to another host; a refused credential is KindAuth and never
// printed.
func TestHelmRepoAuth(t *testing.T) {
	const password = "pw-s3cret-value"
	const token = "tok-s3cret-value"
	basic := "Basic " + base64.StdEncoding.EncodeToString([]byte("bot:"+password))
	tests := map[string]struct {
		auth   *HelmAuth
		header string
		layout string // "absolute": index lists archives on another host; "redirect": the repository redirects there
	}{
		"basic, absolute archive URL": {&HelmAuth{Username: "bot", PasswordFile: writeSecret(t, password)}, basic, "absolute"},
		"bearer, redirect":            {&HelmAuth{BearerTokenFile: writeSecret(t, token)}, "Bearer " + token, "redirect"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			elsewhere := startRepo(t)
			data, err := helmserver.Package(webChart("1.0.0"))
			if err != nil {
				t.Fatal(err)
			}
			elsewhere.PublishArchive("web", "1.0.0", data)
			repo := helmserver.Start()
			t.Cleanup(repo.Close)
			repo.PublishArchive("web", "1.0.0", data)
			repo.RequireAuth(tc.header)
			url := repo.URL
			switch tc.layout {
			case "absolute":
				repo.ServeChartsFrom(elsewhere.URL)
			case "redirect":
				front := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
					if strings.HasPrefix(r.URL.Path, "/charts/") {
						http.Redirect(w, r, elsewhere.URL+r.URL.Path, http.StatusFound)
						return
					}
					repo.Handler().ServeHTTP(w, r)
				}))
				t.Cleanup(front.Close)
				url = front.URL
			}
			r, _ := newTestHelmRepo(t, HelmSpec{URL: url, Auth: tc.auth, Charts: []ChartRef{{Chart: "web"}}})
			if _, _, err := r.Poll(context.Background()); err != nil {
				t.Fatal(err)
			}
			for _, req := range elsewhere.Requests() {
				if req.Authorization != "" {
					t.Errorf("the credential was sent to another host (%s)", req.Path)
				}
			}
			if n := len(elsewhere.Requests()); n != 1 {
				t.Errorf("%d requests to the archive's host, want 1", n)
			}
		})
	}

	t.Run("refused", func(t *testing.T) {
		repo := startRepo(t)
		publish(t, repo, webChart("1.0.0"))
		repo.RequireAuth("Basic something-else")
		r, _ := newTestHelmRepo(t, HelmSpec{URL: repo.URL, Auth: &HelmAuth{Username: "bot", PasswordFile: writeSecret(t, password)}, Charts: []ChartRef{{Chart: "web"}}})
		_, _, err := r.Poll(context.Background())
		var se *Error
		if !errors.As(err, &se) || se.Kind != KindAuth {
			t.Fatalf("poll with a refused password: %v; want %s", err, KindAuth)
		}
		if strings.Contains(err.Error(), password) || strings.Contains(err.Error(), base64.StdEncoding.EncodeToString([]byte("bot:"+password))) {
			t.Errorf("the error shows the credential: %v", err)
		}
	})

	t.Run("CA file", func(t *testing.T) {
		repo := helmserver.StartTLS()
		t.Cleanup(repo.Close)
		if _, err := repo.Publish(webChart("1.0.0")); err != nil {
			t.Fatal(err)
		}
		untrusted, _ := newTestHelmRepo(t, HelmSpec{URL: repo.URL, Charts: []ChartRef{{Chart: "web"}}})
		if _, _, err := untrusted.Poll(context.Background()); err == nil {
			t.Errorf("poll of a TLS repository with an unknown CA succeeded")
		}
		ca := filepath.Join(t.TempDir(), "ca.pem")
		if err := os.WriteFile(ca, repo.CACert(), 0o600); err != nil {
			t.Fatal(err)
		}
		trusted, _ := newTestHelmRepo(t, HelmSpec{URL: repo.URL, Auth: &HelmAuth{CAFile: ca}, Charts: []ChartRef{{Chart: "web"}}})
		if _, _, err := trusted.Poll(context.Background()); err != nil {
			t.Errorf("poll with caFile: %v", err)
		}
	})
}

// TestHelmRepoDependencies: a remote dependency whose repository is a
// declared source is fetched through it (with that source's own
// credentials) into charts/; one from anywhere else is an error naming
// the chart and the dependency; a vendored one is left alone.
func TestHelmRepoDependencies(t *testing.T) {
	const token = "libs-t0ken-value"
	libs := startRepo(t)
	publish(t, libs, helmserver.Chart{Name: "lib", Version: "0.2.0", Files: map[string]string{"templates/lib.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: lib\n"}})
	libs.RequireAuth("Bearer " + token)
	apps := startRepo(t)
	publish(t, apps, helmserver.Chart{Name: "app", Version: "1.0.0", Dependencies: []*chart.Dependency{{Name: "lib", Version: "~0.2", Repository: libs.URL + "/"}}})
	publish(t, apps, helmserver.Chart{Name: "stray", Version: "1.0.0", Dependencies: []*chart.Dependency{{Name: "redis", Version: "1.0.0", Repository: "https://charts.example.com"}}})

	rs, err := NewHelmRepos(Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := rs.Add(HelmSpec{Name: "libs", URL: libs.URL, Interval: time.Minute, Auth: &HelmAuth{BearerTokenFile: writeSecret(t, token)}}); err != nil {
		t.Fatal(err)
	}
	r, err := rs.Add(HelmSpec{Name: "apps", URL: apps.URL, Interval: time.Minute, Charts: []ChartRef{{Chart: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	rev, _, err := r.Poll(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := rev.Chart(ChartRef{Chart: "app"})
	if _, err := os.Stat(filepath.Join(cr.ChartDir, "charts", "lib-0.2.0.tgz")); err != nil {
		t.Errorf("dependency lib not fetched into charts/: %v", err)
	}
	for _, req := range apps.Requests() {
		if req.Authorization != "" {
			t.Errorf("libs' token was sent to the apps repository (%s)", req.Path)
		}
	}

	stray, err := rs.Add(HelmSpec{Name: "strays", URL: apps.URL + "/", Interval: time.Minute, Charts: []ChartRef{{Chart: "stray"}}})
	if err != nil {
		t.Fatal(err)
	}
	_, _, err = stray.Poll(context.Background())
	if err == nil || !strings.Contains(err.Error(), "chart stray") || !strings.Contains(err.Error(), `dependency "redis"`) {
		t.Errorf("poll of a chart with an undeclared dependency: %v; want an error naming chart stray and dependency redis", err)
	}
}

// TestHelmRepoIndexReadForADependency: a chart of another source reads
// this source's index for a dependency (taking the fresh index and its
// validators); this source's next poll still sees its own chart moved,
// though the repository then answers 304.
func TestHelmRepoIndexReadForADependency(t *testing.T) {
	libs := startRepo(t)
	publish(t, libs, helmserver.Chart{Name: "lib", Version: "0.1.0"})
	publish(t, libs, webChart("1.0.0"))
	apps := startRepo(t)
	publish(t, apps, helmserver.Chart{Name: "app", Version: "1.0.0", Dependencies: []*chart.Dependency{{Name: "lib", Version: "*", Repository: libs.URL}}})
	rs, err := NewHelmRepos(Options{CacheDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	libRepo, err := rs.Add(HelmSpec{Name: "libs", URL: libs.URL, Interval: time.Minute, Charts: []ChartRef{{Chart: "web"}}})
	if err != nil {
		t.Fatal(err)
	}
	appRepo, err := rs.Add(HelmSpec{Name: "apps", URL: apps.URL, Interval: time.Minute, Charts: []ChartRef{{Chart: "app"}}})
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	if _, _, err := libRepo.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	publish(t, libs, webChart("1.1.0"))
	if _, _, err := appRepo.Poll(ctx); err != nil {
		t.Fatal(err)
	}
	rev, res, err := libRepo.Poll(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cr, _ := rev.Chart(ChartRef{Chart: "web"})
	if res.Moved != Updated || cr.Version != "1.1.0" {
		t.Errorf("poll after a dependency read the new index: moved %v, web %s; want Updated, 1.1.0", res.Moved, cr.Version)
	}
}
