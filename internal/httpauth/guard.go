package httpauth

import (
	"cmp"
	"context"
	"crypto/sha256"
	"errors"
	"fmt"
	"net/http"
	"strings"
	"sync"
	"time"

	authenticationv1 "k8s.io/api/authentication/v1"
	authorizationv1 "k8s.io/api/authorization/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/clock"
)

// TokenReviewer creates TokenReviews (client-go's
// AuthenticationV1().TokenReviews()).
type TokenReviewer interface {
	Create(ctx context.Context, review *authenticationv1.TokenReview, opts metav1.CreateOptions) (*authenticationv1.TokenReview, error)
}

// AccessReviewer creates SubjectAccessReviews (client-go's
// AuthorizationV1().SubjectAccessReviews()).
type AccessReviewer interface {
	Create(ctx context.Context, review *authorizationv1.SubjectAccessReview, opts metav1.CreateOptions) (*authorizationv1.SubjectAccessReview, error)
}

// Options tunes a Guard. Zero values take the defaults.
type Options struct {
	// AllowTTL is how long an allowed decision is reused (default 1m,
	// controller-runtime caches authentication for 1m and allows for 5m).
	AllowTTL time.Duration
	// DenyTTL is how long a refused one is (default 10s: a new grant works
	// within seconds).
	DenyTTL time.Duration
	// MaxEntries bounds the cache (default 4096).
	MaxEntries int
	// Timeout bounds each review request (default 10s).
	Timeout time.Duration
	// Clock is for tests (default the real clock).
	Clock clock.PassiveClock
	// Grant is what a 403 tells the user to be granted (default "the
	// ClusterRole syncd-metrics-reader").
	Grant string
	// OnError, if set, gets the detail of each review that failed (for the
	// caller's log); the client is told only that the API server could not
	// be asked.
	OnError func(error)
}

// Guard authenticates and authorizes requests against the API server.
type Guard struct {
	authn TokenReviewer
	authz AccessReviewer
	opts  Options

	mu    sync.Mutex
	cache map[cacheKey]cached
}

// New returns a Guard asking authn and authz.
func New(authn TokenReviewer, authz AccessReviewer, opts Options) (*Guard, error) {
	if authn == nil || authz == nil {
		return nil, errors.New("httpauth: a TokenReviewer and an AccessReviewer are required")
	}
	if opts.AllowTTL < 0 || opts.DenyTTL < 0 || opts.MaxEntries < 0 || opts.Timeout < 0 {
		return nil, errors.New("httpauth: AllowTTL, DenyTTL, MaxEntries and Timeout must not be negative")
	}
	opts.AllowTTL = cmp.Or(opts.AllowTTL, time.Minute)
	opts.DenyTTL = cmp.Or(opts.DenyTTL, 10*time.Second)
	opts.MaxEntries = cmp.Or(opts.MaxEntries, 4096)
	opts.Timeout = cmp.Or(opts.Timeout, 10*time.Second)
	opts.Grant = cmp.Or(opts.Grant, "the ClusterRole syncd-metrics-reader")
	if opts.Clock == nil {
		opts.Clock = clock.RealClock{}
	}
	return &Guard{authn: authn, authz: authz, opts: opts, cache: map[cacheKey]cached{}}, nil
}

// Decision is the outcome for one request.
type Decision struct {
	// Code is 200 (allowed), 401, 403 or 500.
	Code int
	// Reason is said to the client; it names the user, never the token.
	Reason string
}

func (d Decision) allowed() bool { return d.Code == http.StatusOK }

// Wrap serves next only to allowed requests, each authorized for its
// own path.
func (g *Guard) Wrap(next http.Handler) http.Handler {
	return g.wrap(func(r *http.Request) string { return r.URL.Path }, next)
}

// WrapAs serves next only to requests allowed on path, whatever their
// own: one grant for every page of an application (the UI's /ui).
func (g *Guard) WrapAs(path string, next http.Handler) http.Handler {
	return g.wrap(func(*http.Request) string { return path }, next)
}

func (g *Guard) wrap(pathOf func(*http.Request) string, next http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d := g.Decide(r.Context(), bearerToken(r.Header), pathOf(r), strings.ToLower(r.Method))
		if !d.allowed() {
			if d.Code == http.StatusUnauthorized {
				w.Header().Set("WWW-Authenticate", `Bearer realm="syncd"`)
			}
			http.Error(w, d.Reason, d.Code)
			return
		}
		next.ServeHTTP(w, r)
	})
}

// bearerToken returns the token of an "Authorization: Bearer" header, or "".
func bearerToken(h http.Header) string {
	scheme, tok, ok := strings.Cut(strings.TrimSpace(h.Get("Authorization")), " ")
	if !ok || !strings.EqualFold(scheme, "bearer") {
		return ""
	}
	return strings.TrimSpace(tok)
}

// Decide says whether token may use verb on path, from the cache or from
// the API server.
func (g *Guard) Decide(ctx context.Context, token, path, verb string) Decision {
	if token == "" {
		return Decision{Code: http.StatusUnauthorized, Reason: "Unauthorized: a bearer token is required"}
	}
	key := cacheKey{token: sha256.Sum256([]byte(token)), path: path, verb: verb}
	if d, ok := g.lookup(key); ok {
		return d
	}
	d, err := g.review(ctx, token, path, verb)
	if err != nil {
		if g.opts.OnError != nil {
			g.opts.OnError(fmt.Errorf("%s %s: %w", verb, path, err))
		}
		// Not cached: the next request asks again.
		return Decision{Code: http.StatusInternalServerError, Reason: "the API server could not review the token; try again"}
	}
	g.store(key, d)
	return d
}

// review asks the API server: who is the token (TokenReview), and may
// that user use verb on path (SubjectAccessReview).
func (g *Guard) review(ctx context.Context, token, path, verb string) (Decision, error) {
	ctx, cancel := context.WithTimeout(ctx, g.opts.Timeout)
	defer cancel()
	tr, err := g.authn.Create(ctx, &authenticationv1.TokenReview{Spec: authenticationv1.TokenReviewSpec{Token: token}}, metav1.CreateOptions{})
	if err != nil {
		return Decision{}, fmt.Errorf("authentication failed: TokenReview: %w", err)
	}
	if !tr.Status.Authenticated {
		return Decision{Code: http.StatusUnauthorized, Reason: "Unauthorized: the API server does not accept the token"}, nil
	}
	u := tr.Status.User
	sar, err := g.authz.Create(ctx, accessReview(u, path, verb), metav1.CreateOptions{})
	if err != nil {
		return Decision{}, fmt.Errorf("authorization of user %s failed: SubjectAccessReview: %w", u.Username, err)
	}
	if !sar.Status.Allowed || sar.Status.Denied {
		return Decision{Code: http.StatusForbidden, Reason: fmt.Sprintf("Forbidden: user %s may not %s %s (grant %s)", u.Username, verb, path, g.opts.Grant)}, nil
	}
	return Decision{Code: http.StatusOK}, nil
}

// accessReview is the SubjectAccessReview for u using verb on the
// non-resource URL path.
func accessReview(u authenticationv1.UserInfo, path, verb string) *authorizationv1.SubjectAccessReview {
	extra := make(map[string]authorizationv1.ExtraValue, len(u.Extra))
	for k, v := range u.Extra {
		extra[k] = authorizationv1.ExtraValue(v)
	}
	return &authorizationv1.SubjectAccessReview{Spec: authorizationv1.SubjectAccessReviewSpec{
		User:                  u.Username,
		UID:                   u.UID,
		Groups:                u.Groups,
		Extra:                 extra,
		NonResourceAttributes: &authorizationv1.NonResourceAttributes{Path: path, Verb: verb},
	}}
}
