package source

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
)

// HelmSpec is one Helm chart repository (an HTTP(S) server holding
// index.yaml) as syncd follows it: where it is, how often to look, and
// which charts the apps of the source render from it.
type HelmSpec struct {
	// Name names the source in errors and its cache directory.
	Name string
	// URL is the repository's base URL (http or https, no credentials);
	// index.yaml is read from <URL>/index.yaml.
	URL string
	// Interval is how often the Scheduler polls index.yaml (positive).
	Interval time.Duration
	// Auth, when set, names the files holding credentials and the CA.
	Auth *HelmAuth
	// Charts are the charts a poll resolves and fetches: one per distinct
	// chart and version asked for by the source's apps.
	Charts []ChartRef
}

// HelmAuth names files holding a Helm repository's credentials; they are
// re-read on every poll. At most one of PasswordFile (basic auth, with
// Username), BearerTokenFile and DockerConfigFile is set; DockerConfigFile
// only for a repository at an oci:// URL (read as an OCI source's
// OCIAuth.DockerConfigFile). Credentials are sent only to the
// repository's own scheme, host and port: never to a chart URL or a
// redirect elsewhere.
type HelmAuth struct {
	Username         string
	PasswordFile     string
	BearerTokenFile  string
	DockerConfigFile string
	// CAFile holds PEM certificates trusted for TLS instead of the
	// system's roots.
	CAFile string
}

// ChartRef is a chart an app renders from a Helm repository.
type ChartRef struct {
	// Chart is the chart's name in index.yaml.
	Chart string
	// Version is an exact version or a semver range; empty: the highest
	// version that is not a prerelease.
	Version string
}

// String returns "chart@version" ("chart" for the latest).
func (c ChartRef) String() string {
	if c.Version == "" {
		return c.Chart
	}
	return c.Chart + "@" + c.Version
}

// ChartRevision is one chart a Helm repository poll resolved and fetched.
type ChartRevision struct {
	// Ref is what was asked for.
	Ref ChartRef
	// Version is the version resolved.
	Version string
	// Digest is the sha256 (hex) of the chart archive.
	Digest string
	// Root is the directory the archive was expanded into (a render's
	// tree root); ChartDir is the chart's directory in it (Root/<name>),
	// vendored and fetched dependencies under its charts/.
	Root, ChartDir string
}

// HelmRevision is what one poll of a Helm repository resolved.
type HelmRevision struct {
	// Charts are in the order of HelmSpec.Charts.
	Charts []ChartRevision
}

// Chart returns the revision of ref, false when the revision is not a
// Helm repository's or did not resolve ref.
func (r Revision) Chart(ref ChartRef) (ChartRevision, bool) {
	if r.Helm == nil {
		return ChartRevision{}, false
	}
	for _, c := range r.Helm.Charts {
		if c.Ref == ref {
			return c, true
		}
	}
	return ChartRevision{}, false
}

// HelmRepo polls one Helm chart repository. It is safe for concurrent
// use; polls are serialised.
type HelmRepo struct {
	spec   HelmSpec
	base   *url.URL // URL with a trailing slash, for resolving chart URLs
	ranges map[ChartRef]*semver.Constraints
	dir    string
	repos  *HelmRepos

	pollMu sync.Mutex // serialises Poll
	// resolvedGen is the index generation the revision in force was
	// resolved against (guarded by pollMu).
	resolvedGen uint64

	// oci is set for a repository at an oci:// URL (oci_helm.go): charts
	// are registry repositories, versions their tags; no index.yaml.
	oci *ociHelm

	idxMu sync.Mutex // guards idx (polls and other charts' dependencies)
	idx   *cachedIndex

	treeState
}

var _ Poller = (*HelmRepo)(nil)

// HelmRepos is the set of Helm repository sources of one config: a
// chart's remote dependency is fetched through the source whose URL is
// the dependency's repository, and through no other.
type HelmRepos struct {
	opts  Options
	mu    sync.Mutex
	byURL map[string]*HelmRepo
}

// NewHelmRepos returns an empty set whose repositories cache under
// opts.CacheDir.
func NewHelmRepos(opts Options) (*HelmRepos, error) {
	if opts.CacheDir == "" {
		return nil, errors.New("source: Options.CacheDir is required")
	}
	return &HelmRepos{opts: opts, byURL: map[string]*HelmRepo{}}, nil
}

// Add checks the spec (naming the bad field) and adds a HelmRepo whose
// cache lives in CacheDir/<name>. It does no I/O beyond creating that
// directory.
func (rs *HelmRepos) Add(spec HelmSpec) (*HelmRepo, error) {
	r, err := newHelmRepo(spec, rs)
	if err != nil {
		return nil, err
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	rs.byURL[repoKey(r.base)] = r
	return r, nil
}

// lookup returns the repository at raw (a dependency's repository URL),
// nil when none of the set is.
func (rs *HelmRepos) lookup(raw string) *HelmRepo {
	u, err := url.Parse(strings.TrimSpace(raw))
	if err != nil {
		return nil
	}
	rs.mu.Lock()
	defer rs.mu.Unlock()
	return rs.byURL[repoKey(withSlash(u))]
}

// repoKey is how repository URLs are compared: scheme and host
// lower-cased, path with one trailing slash.
func repoKey(u *url.URL) string {
	return strings.ToLower(u.Scheme) + "://" + strings.ToLower(u.Host) + u.EscapedPath()
}

func withSlash(u *url.URL) *url.URL {
	c := *u
	if !strings.HasSuffix(c.Path, "/") {
		c.Path += "/"
		if c.RawPath != "" {
			c.RawPath += "/"
		}
	}
	return &c
}

func newHelmRepo(spec HelmSpec, rs *HelmRepos) (*HelmRepo, error) {
	field := func(f string) string { return fmt.Sprintf("sources[%s].helm.%s", spec.Name, f) }
	if !sourceNameRE.MatchString(spec.Name) {
		return nil, fmt.Errorf("source name %q: must be lower-case letters, digits, '.', '_' or '-' (it names a cache directory)", spec.Name)
	}
	u, err := helmBaseURL(spec.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field("url"), err)
	}
	if spec.Interval <= 0 {
		return nil, fmt.Errorf("%s: must be positive", field("interval"))
	}
	if err := checkHelmAuth(spec.Auth, u.Scheme); err != nil {
		return nil, fmt.Errorf("%s: %w", field("auth"), err)
	}
	r := &HelmRepo{spec: spec, base: u, ranges: map[ChartRef]*semver.Constraints{}, repos: rs}
	if u.Scheme == "oci" {
		if r.oci, err = newOCIHelm(u); err != nil {
			return nil, fmt.Errorf("%s: %w", field("url"), err)
		}
	}
	for _, c := range spec.Charts {
		if err := r.addRange(c); err != nil {
			return nil, err
		}
	}
	r.dir = filepath.Join(rs.opts.CacheDir, spec.Name)
	for _, sub := range []string{"charts", "trees"} {
		if err := os.MkdirAll(filepath.Join(r.dir, sub), 0o755); err != nil {
			return nil, fmt.Errorf("source %q: create cache directory: %w", spec.Name, err)
		}
	}
	return r, nil
}

// checkHelmAuth checks that a sets one kind of credentials, and a Docker
// config file only for a registry (scheme oci).
func checkHelmAuth(a *HelmAuth, scheme string) error {
	if a == nil {
		return nil
	}
	switch {
	case countSet(a.PasswordFile, a.BearerTokenFile, a.DockerConfigFile) > 1:
		return errors.New("set one of passwordFile, bearerTokenFile and dockerConfigFile")
	case a.DockerConfigFile != "" && scheme != "oci":
		return errors.New("dockerConfigFile is read only for a repository at an oci:// URL; set username and passwordFile, or bearerTokenFile")
	}
	return nil
}

// addRange parses a chart's version range ("" is any stable version).
func (r *HelmRepo) addRange(c ChartRef) error {
	v := c.Version
	if v == "" {
		v = "*"
	}
	con, err := semver.NewConstraint(v)
	if err != nil {
		return fmt.Errorf("chart %s of source %q: version %q is not a version or semver range: %w", c.Chart, r.spec.Name, c.Version, err)
	}
	r.ranges[c] = con
	return nil
}

// helmBaseURL parses a repository URL: http(s), a host, no credentials;
// the result ends in a slash.
func helmBaseURL(raw string) (*url.URL, error) {
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input; do not echo it.
		return nil, errors.New("is not a valid URL")
	}
	if u.User != nil {
		return nil, errors.New("must not contain credentials; put them in helm.auth")
	}
	if u.Scheme != "http" && u.Scheme != "https" && u.Scheme != "oci" {
		return nil, fmt.Errorf("scheme %q is not supported (use https, http or oci)", u.Scheme)
	}
	if u.Host == "" {
		return nil, errors.New("has no host")
	}
	return withSlash(u), nil
}

// Name returns the source's config name.
func (r *HelmRepo) Name() string { return r.spec.Name }

// Job returns the scheduling job for the source's interval.
func (r *HelmRepo) Job() Job { return Job{Poller: r, Interval: r.spec.Interval} }

// Descends reports AncestryDescends: a Helm repository has no history, a
// chart version moving back is not a rewind of anything.
func (r *HelmRepo) Descends(context.Context, string, string) (Ancestry, error) {
	return AncestryDescends, nil
}

// displayURL is the repository's URL as configured (it has no
// credentials).
func (r *HelmRepo) displayURL() string { return r.spec.URL }

func (r *HelmRepo) newError(kind Kind, op string, err error, hint string) *Error {
	return &Error{Source: r.spec.Name, Kind: kind, URL: r.displayURL(), Ref: "helm index", Op: op, Hint: r.inForceHint(hint), Err: err}
}
