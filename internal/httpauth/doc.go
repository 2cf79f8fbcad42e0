// Package httpauth guards HTTP endpoints with a Kubernetes bearer token,
// the way controller-runtime's secure metrics serving
// (pkg/metrics/filters.WithAuthenticationAndAuthorization) does: the
// token is authenticated with a TokenReview, and the user it names is
// authorized with a SubjectAccessReview for the request's non-resource
// URL (path) and verb (the lower-cased HTTP method, "get" for GET), so a
// ClusterRole rule `nonResourceURLs: [/metrics], verbs: [get]` grants it.
//
// No token or a token the API server does not accept is 401, a user RBAC
// does not allow is 403, an API server that cannot be asked is 500 (never
// an allow). Decisions are cached by the SHA-256 of the token, path and
// verb: allowed ones for Options.AllowTTL, refused ones for
// Options.DenyTTL; the cache is bounded.
//
// It does not guarantee: that a revoked token or RoleBinding stops working
// before its cached decision expires; anything about token audiences (the
// TokenReview uses the API server's own); confidentiality of the token on
// the wire, which is TLS's job, not this package's. It never prints a
// token.
package httpauth
