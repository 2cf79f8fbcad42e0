package httpauth

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
)

// fakeAPI answers reviews from tables and counts them. The real behaviour
// (tokens, RBAC) is tested against the API server in cmd/syncd; this fake
// tests the cache and the error paths.
type fakeAPI struct {
	mu                          sync.Mutex
	users                       map[string]string          // token → username
	allowed                     map[string]map[string]bool // username → "verb path" → allowed
	fail                        error
	tokenReviews, accessReviews int
	lastSAR                     *authorizationv1.SubjectAccessReviewSpec
}

type fakeTokens struct{ *fakeAPI }
type fakeAccess struct{ *fakeAPI }

func (f fakeTokens) Create(_ context.Context, tr *authenticationv1.TokenReview, _ metav1.CreateOptions) (*authenticationv1.TokenReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.tokenReviews++
	if f.fail != nil {
		return nil, f.fail
	}
	out := tr.DeepCopy()
	if u, ok := f.users[tr.Spec.Token]; ok {
		out.Status = authenticationv1.TokenReviewStatus{Authenticated: true, User: authenticationv1.UserInfo{Username: u, Groups: []string{"system:authenticated"}}}
	}
	return out, nil
}

func (f fakeAccess) Create(_ context.Context, sar *authorizationv1.SubjectAccessReview, _ metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	f.accessReviews++
	f.lastSAR = sar.Spec.DeepCopy()
	out := sar.DeepCopy()
	a := sar.Spec.NonResourceAttributes
	out.Status.Allowed = a != nil && f.allowed[sar.Spec.User][a.Verb+" "+a.Path]
	return out, nil
}

func newFake() *fakeAPI {
	return &fakeAPI{
		users:   map[string]string{"reader-token": "reader", "other-token": "other"},
		allowed: map[string]map[string]bool{"reader": {"get /metrics": true, "get /status": true}},
	}
}

func TestWrap(t *testing.T) {
	tests := map[string]struct {
		auth   string
		method string
		path   string
		fail   error
		want   int
	}{
		"reader gets /metrics":        {auth: "Bearer reader-token", path: "/metrics", want: 200},
		"scheme is case-insensitive":  {auth: "bearer reader-token", path: "/status", want: 200},
		"reader may not POST":         {auth: "Bearer reader-token", method: http.MethodPost, path: "/status", want: 403},
		"other user is forbidden":     {auth: "Bearer other-token", path: "/metrics", want: 403},
		"unknown token":               {auth: "Bearer nope", path: "/metrics", want: 401},
		"no token":                    {path: "/metrics", want: 401},
		"basic auth is no token":      {auth: "Basic cmVhZGVyOng=", path: "/metrics", want: 401},
		"API server unreachable: 500": {auth: "Bearer reader-token", path: "/metrics", fail: errors.New("connection refused"), want: 500},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			api := newFake()
			api.fail = tc.fail
			var logged []error
			g, err := New(fakeTokens{api}, fakeAccess{api}, Options{OnError: func(err error) { logged = append(logged, err) }})
			if err != nil {
				t.Fatal(err)
			}
			h := g.Wrap(http.HandlerFunc(func(w http.ResponseWriter, _ *http.Request) { w.Write([]byte("secret data")) }))
			method := tc.method
			if method == "" {
				method = http.MethodGet
			}
			req := httptest.NewRequest(method, tc.path, nil)
			if tc.auth != "" {
				req.Header.Set("Authorization", tc.auth)
			}
			w := httptest.NewRecorder()
			h.ServeHTTP(w, req)
			if w.Code != tc.want {
				t.Fatalf("code %d, want %d: %s", w.Code, tc.want, w.Body)
			}
			if tc.want != 200 && strings.Contains(w.Body.String(), "secret data") {
				t.Errorf("refused request got the body")
			}
			if strings.Contains(w.Body.String(), "reader-token") || strings.Contains(w.Body.String(), "other-token") {
				t.Errorf("answer %q echoes the token", w.Body)
			}
			if tc.want == 401 && w.Header().Get("WWW-Authenticate") == "" {
				t.Errorf("401 without WWW-Authenticate")
			}
			if (tc.fail != nil) != (len(logged) == 1) {
				t.Errorf("OnError got %v, want one error iff the API failed", logged)
			}
		})
	}
}

// TestAccessReviewAttributes: the SAR names the user and the non-resource
// URL and verb, like controller-runtime's filter.
func TestAccessReviewAttributes(t *testing.T) {
	api := newFake()
	g, _ := New(fakeTokens{api}, fakeAccess{api}, Options{})
	g.Decide(context.Background(), "reader-token", "/status", "get")
	want := &authorizationv1.SubjectAccessReviewSpec{
		User: "reader", Groups: []string{"system:authenticated"}, Extra: map[string]authorizationv1.ExtraValue{},
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: "/status", Verb: "get"},
	}
	if diff := cmp.Diff(want, api.lastSAR); diff != "" {
		t.Errorf("SubjectAccessReview spec (-want +got):\n%s", diff)
	}
}

// TestCache: a decision is reused until its TTL (allowed longer than
// refused), per token, path and verb; failures are never cached.
func TestCache(t *testing.T) {
	api := newFake()
	clk := clocktesting.NewFakePassiveClock(time.Unix(1000, 0))
	g, _ := New(fakeTokens{api}, fakeAccess{api}, Options{AllowTTL: time.Minute, DenyTTL: 10 * time.Second, Clock: clk})
	ctx := context.Background()
	type counts struct{ Token, Access int }
	got := func() counts { return counts{api.tokenReviews, api.accessReviews} }
	step := func(what string, token, path string, want counts, code int) {
		t.Helper()
		if d := g.Decide(ctx, token, path, "get"); d.Code != code {
			t.Errorf("%s: code %d, want %d", what, d.Code, code)
		}
		if diff := cmp.Diff(want, got()); diff != "" {
			t.Errorf("%s: reviews (-want +got):\n%s", what, diff)
		}
	}
	step("first allow asks", "reader-token", "/metrics", counts{1, 1}, 200)
	step("second is cached", "reader-token", "/metrics", counts{1, 1}, 200)
	step("other path asks", "reader-token", "/status", counts{2, 2}, 200)
	step("deny asks", "other-token", "/metrics", counts{3, 3}, 403)
	step("deny cached", "other-token", "/metrics", counts{3, 3}, 403)
	clk.SetTime(clk.Now().Add(11 * time.Second))
	step("deny expired after DenyTTL", "other-token", "/metrics", counts{4, 4}, 403)
	step("allow still cached", "reader-token", "/metrics", counts{4, 4}, 200)
	clk.SetTime(clk.Now().Add(time.Minute))
	step("allow expired after AllowTTL", "reader-token", "/metrics", counts{5, 5}, 200)
	api.fail = errors.New("down")
	step("failure asks", "new-token", "/metrics", counts{6, 5}, 500)
	step("failure not cached", "new-token", "/metrics", counts{7, 5}, 500)
}

// TestCacheBounded: distinct tokens never grow the cache past MaxEntries.
func TestCacheBounded(t *testing.T) {
	api := newFake()
	g, _ := New(fakeTokens{api}, fakeAccess{api}, Options{MaxEntries: 8})
	for i := range 100 {
		g.Decide(context.Background(), strings.Repeat("x", i+1), "/metrics", "get")
		if n := len(g.cache); n > 8 {
			t.Fatalf("cache holds %d entries, want at most 8", n)
		}
	}
}

func TestNewValidates(t *testing.T) {
	api := newFake()
	if _, err := New(nil, fakeAccess{api}, Options{}); err == nil {
		t.Error("New without a TokenReviewer: no error")
	}
	if _, err := New(fakeTokens{api}, fakeAccess{api}, Options{DenyTTL: -1}); err == nil {
		t.Error("New with a negative DenyTTL: no error")
	}
}
