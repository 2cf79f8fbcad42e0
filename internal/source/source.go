package source

import (
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"time"

	"github.com/Masterminds/semver/v3"
)

// Movement says what a successful poll did to the revision in force:
// whether it moved and how.
type Movement int

const (
	// Unchanged: the ref still resolves to the revision in force; nothing
	// was fetched.
	Unchanged Movement = iota
	// Updated: a new revision descending from the previous one (or the
	// first revision) is now in force.
	Updated
	// Rewritten: a new revision is in force but it does not descend from
	// the previous one (force-push, re-tagged tag, semver range moved to
	// an unrelated line). It is followed, and reported.
	Rewritten
)

// String returns the movement's name.
func (c Movement) String() string {
	switch c {
	case Unchanged:
		return "Unchanged"
	case Updated:
		return "Updated"
	case Rewritten:
		return "Rewritten"
	}
	return fmt.Sprintf("Movement(%d)", int(c))
}

// Result describes a successful poll.
type Result struct {
	// Moved says whether the revision moved and how.
	Moved Movement
	// Previous is the SHA in force before the poll; empty on the first.
	Previous string
	// CacheRecovered is non-nil (an *Error of KindCorruptCache) when the
	// cached repository was unreadable and was deleted and cloned again
	// during this poll.
	CacheRecovered error
}

// Revision is one resolved and checked-out revision of a source. The
// planner reads manifests from Dir.
type Revision struct {
	// Source is the config name of the source.
	Source string
	// URL is the repository URL without credentials.
	URL string
	// Ref is the configured ref, e.g. "branch main", "tag v1.0.0",
	// "semver >=1.2.0 <2.0.0", "commit 0123...".
	Ref string
	// SHA is the full commit SHA.
	SHA string
	// Tag is the tag name when the ref is a tag or semver range.
	Tag string
	// CommitTime is the committer time of the commit.
	CommitTime time.Time
	// Author is "Name <email>" of the commit's author.
	Author string
	// Subject is the first line of the commit message.
	Subject string
	// Signer is the identity of the key that verified the signature when
	// git.verify is on; empty otherwise.
	Signer string
	// Helm is what a Helm repository source resolved (nil for a Git
	// source, whose SHA is a commit: a Helm repository's SHA is the
	// sha256 of its charts' versions and digests, and Tag lists them as
	// chart-version). It is shared, never changed: a pointer keeps
	// Revision comparable.
	Helm *HelmRevision
	// Values is, for an app that reads its chart's values files from
	// another source (apps[].helm.valuesSource), that source's revision,
	// joined by package reconcile; SHA then names both. Nil for a
	// revision a source resolved. Shared, never changed.
	Values *Revision
	// Dir is the directory holding the commit's tree. It stays on disk
	// while this revision is the one in force or someone holds it (see
	// Source.Hold); a reader must hold it for as long as it reads.
	Dir string
	// Tree is the hash of the commit's root tree, for a Git revision:
	// what Dir holds, named by its content (an empty commit, or one
	// that only moves a tag, has its parent's). Empty for other sources.
	Tree string
}

// Options are the dependencies of a Source. (A Source reads no clock:
// scheduling, and its clock, belong to the Scheduler.)
type Options struct {
	// CacheDir holds one directory per source (required).
	CacheDir string
}

// Spec is one Git source as syncd follows it: where the repository is,
// which revision to follow, how often to look and how to check it.
type Spec struct {
	// Name names the source in errors and its cache directory.
	Name string
	// URL is an https, http, ssh or file URL (scp-like "git@host:path" is
	// accepted as ssh).
	URL string
	// Exactly one of Branch, Tag, Semver and Commit is set.
	Branch, Tag, Semver, Commit string
	// Exactly one of Interval (positive) and Schedule (a cron spec) is set.
	Interval time.Duration
	Schedule string
	// Auth, when set, names the files holding credentials.
	Auth *Auth
	// Verify, when set, turns on OpenPGP signature verification.
	Verify *Verify
	// OCI, when set, makes the source an OCI artifact (see OCI): URL is
	// oci://host/repository and one of Tag, Semver and OCI.Digest is set.
	OCI *OCI
}

// Auth names files holding credentials; they are re-read on every poll so
// rotated secrets take effect without a restart.
type Auth struct {
	// Username for HTTP basic auth with TokenFile; empty: "git".
	Username       string
	TokenFile      string
	SSHKeyFile     string
	KnownHostsFile string
}

// VerifyMode is what a signature must be on.
type VerifyMode string

// Verification modes.
const (
	// VerifyHead: the resolved commit must be signed.
	VerifyHead VerifyMode = "head"
	// VerifyTag: the annotated tag of the revision must be signed.
	VerifyTag VerifyMode = "tag"
)

// Verify turns on OpenPGP signature verification of the resolved
// revision.
type Verify struct {
	Mode     VerifyMode
	KeysFile string
	// AllowRewrites lets a branch source follow a new head that does not
	// descend from the last verified head (a force-push). Only for branch
	// sources.
	AllowRewrites bool
}

// refKind is which of branch/tag/semver/commit the config set.
type refKind int

const (
	refBranch refKind = iota
	refTag
	refSemver
	refCommit
)

// Source polls one Git repository. It is safe for concurrent use; polls
// are serialised.
type Source struct {
	spec       Spec
	name       string
	url        string // as configured (never has a password)
	displayURL string // without userinfo
	kind       refKind
	refName    string // branch, tag, range or SHA
	constraint *semver.Constraints
	dir        string
	// oci is set for a source that follows an OCI artifact (Spec.OCI).
	oci *ociSource

	pollMu sync.Mutex // serialises Poll

	treeState
	// retired numbers the trees renamed away for deletion (guarded by
	// mu).
	retired uint64
}

var (
	sourceNameRE = regexp.MustCompile(`^[a-z0-9]([a-z0-9._-]{0,61}[a-z0-9])?$`)
	fullSHARE    = regexp.MustCompile(`^[0-9a-f]{40}$`)
)

// New checks the source config (naming the bad field) and returns a Source
// whose cache lives in opts.CacheDir/<name>. It does no I/O beyond creating
// that directory.
func New(src Spec, opts Options) (*Source, error) {
	field := func(f string) string { return fmt.Sprintf("sources[%s].git.%s", src.Name, f) }
	if !sourceNameRE.MatchString(src.Name) {
		return nil, fmt.Errorf("source name %q: must be lower-case letters, digits, '.', '_' or '-' (it names a cache directory)", src.Name)
	}
	if opts.CacheDir == "" {
		return nil, errors.New("source: Options.CacheDir is required")
	}
	if src.OCI != nil {
		return newOCI(src, opts)
	}
	g := src
	s := &Source{spec: src, name: src.Name, url: g.URL}

	disp, scheme, err := displayURL(g.URL)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field("url"), err)
	}
	s.displayURL = disp
	if err := s.setRef(g, field); err != nil {
		return nil, err
	}
	if err := checkTiming(g, field); err != nil {
		return nil, err
	}
	if err := checkAuth(g, scheme, field); err != nil {
		return nil, err
	}
	if err := s.checkVerify(g.Verify, field); err != nil {
		return nil, err
	}

	s.dir = filepath.Join(opts.CacheDir, src.Name)
	if err := os.MkdirAll(filepath.Join(s.dir, "trees"), 0o755); err != nil {
		return nil, fmt.Errorf("source %q: create cache directory: %w", src.Name, err)
	}
	return s, nil
}

// setRef checks that exactly one of branch, tag, semver and commit is set,
// and well formed, and records it as the ref the source follows. field
// names a field of the source's git section in errors.
func (s *Source) setRef(g Spec, field func(string) string) error {
	if n := countSet(g.Branch, g.Tag, g.Semver, g.Commit); n != 1 {
		return fmt.Errorf("%s: set exactly one of branch, tag, semver and commit (%d set)", field("branch|tag|semver|commit"), n)
	}
	switch {
	case g.Branch != "":
		s.kind, s.refName = refBranch, g.Branch
		if strings.HasPrefix(g.Branch, "refs/") {
			return fmt.Errorf("%s: %q: give the branch name without refs/heads/", field("branch"), g.Branch)
		}
	case g.Tag != "":
		s.kind, s.refName = refTag, g.Tag
		if strings.HasPrefix(g.Tag, "refs/") {
			return fmt.Errorf("%s: %q: give the tag name without refs/tags/", field("tag"), g.Tag)
		}
	case g.Semver != "":
		return s.setSemver(g.Semver, field)
	case g.Commit != "":
		s.kind, s.refName = refCommit, strings.ToLower(g.Commit)
		if !fullSHARE.MatchString(s.refName) {
			return fmt.Errorf("%s: %q must be a full 40-character hex SHA", field("commit"), g.Commit)
		}
	}
	return nil
}

// setSemver records the semver range a Git or an OCI source follows;
// field names the source's field in errors.
func (s *Source) setSemver(r string, field func(string) string) error {
	c, err := semver.NewConstraint(r)
	if err != nil {
		return fmt.Errorf("%s: %q is not a semver range: %w", field("semver"), r, err)
	}
	s.kind, s.refName, s.constraint = refSemver, r, c
	return nil
}

// countSet counts the values that are set (not empty): the fields of a
// set-exactly-one-of group.
func countSet(vs ...string) int {
	n := 0
	for _, v := range vs {
		if v != "" {
			n++
		}
	}
	return n
}

// checkTiming checks that exactly one of interval and schedule is set, and
// well formed.
func checkTiming(g Spec, field func(string) string) error {
	if (g.Interval == 0) == (g.Schedule == "") {
		return fmt.Errorf("%s: set exactly one of interval and schedule", field("interval|schedule"))
	}
	if g.Interval < 0 {
		return fmt.Errorf("%s: %s must be positive", field("interval"), g.Interval)
	}
	if g.Schedule != "" {
		if _, err := parseSchedule(g.Schedule); err != nil {
			return fmt.Errorf("%s: %q: %w", field("schedule"), g.Schedule, err)
		}
	}
	return nil
}

// checkAuth checks that the credentials configured fit the url's scheme:
// a token for http(s), a key and known hosts for ssh (which needs them).
func checkAuth(g Spec, scheme string, field func(string) string) error {
	if a := g.Auth; a != nil {
		if a.TokenFile != "" && a.SSHKeyFile != "" {
			return fmt.Errorf("%s: set tokenFile or sshKeyFile, not both", field("auth"))
		}
		if a.TokenFile != "" && scheme != "http" && scheme != "https" {
			return fmt.Errorf("%s: tokenFile needs an http(s) url, got %s", field("auth.tokenFile"), scheme)
		}
		if a.SSHKeyFile != "" && scheme != "ssh" {
			return fmt.Errorf("%s: sshKeyFile needs an ssh url, got %s", field("auth.sshKeyFile"), scheme)
		}
		if a.SSHKeyFile != "" && a.KnownHostsFile == "" {
			return fmt.Errorf("%s: is required with sshKeyFile (host keys are always checked)", field("auth.knownHostsFile"))
		}
	}
	if scheme == "ssh" && (g.Auth == nil || g.Auth.SSHKeyFile == "") {
		return fmt.Errorf("%s: an ssh url needs git.auth.sshKeyFile and git.auth.knownHostsFile", field("auth.sshKeyFile"))
	}
	return nil
}

// checkVerify checks the verify section (nil: not set) against the ref
// kind setRef recorded.
func (s *Source) checkVerify(v *Verify, field func(string) string) error {
	if v == nil {
		return nil
	}
	switch v.Mode {
	case VerifyHead:
	case VerifyTag:
		if s.kind != refTag && s.kind != refSemver {
			return fmt.Errorf("%s: mode %q needs a tag or semver ref", field("verify.mode"), v.Mode)
		}
	default:
		return fmt.Errorf("%s: %q must be %q or %q", field("verify.mode"), v.Mode, VerifyHead, VerifyTag)
	}
	if v.KeysFile == "" {
		return fmt.Errorf("%s: is required when verify is set", field("verify.keysFile"))
	}
	if v.AllowRewrites && s.kind != refBranch {
		return fmt.Errorf("%s: applies to branch sources only; remove it", field("verify.allowRewrites"))
	}
	return nil
}

// Name returns the source's config name.
func (s *Source) Name() string { return s.name }

func (s *Source) refString() string {
	if s.oci != nil {
		return s.ociRefString()
	}
	switch s.kind {
	case refBranch:
		return "branch " + s.refName
	case refTag:
		return "tag " + s.refName
	case refSemver:
		return "semver " + s.refName
	default:
		return "commit " + s.refName
	}
}

var scpLikeRE = regexp.MustCompile(`^([^@/:]+@)?([^/:]+):(.+)$`)

// displayURL returns raw without userinfo, and its scheme. A URL carrying a
// password is refused: the password belongs in a file.
func displayURL(raw string) (string, string, error) {
	if raw == "" {
		return "", "", errors.New("is required")
	}
	if !strings.Contains(raw, "://") {
		if m := scpLikeRE.FindStringSubmatch(raw); m != nil {
			return m[2] + ":" + m[3], "ssh", nil
		}
		return "", "", fmt.Errorf("%q is not an http(s), ssh or file URL", raw)
	}
	u, err := url.Parse(raw)
	if err != nil {
		// url.Error quotes the input; do not echo it, it may hold a secret.
		return "", "", errors.New("is not a valid URL")
	}
	if _, has := u.User.Password(); has {
		return "", "", errors.New("must not contain a password; put the token in git.auth.tokenFile")
	}
	switch u.Scheme {
	case "http", "https", "ssh", "file":
	default:
		return "", "", fmt.Errorf("scheme %q is not supported (use https, http, ssh or file)", u.Scheme)
	}
	u.User = nil
	return u.String(), u.Scheme, nil
}
