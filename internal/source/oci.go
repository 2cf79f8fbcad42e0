package source

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
)

// OCI makes a Spec an OCI artifact in a registry rather than a Git
// repository: Spec.URL is oci://host[:port]/repository and exactly one of
// Spec.Tag, Spec.Semver and Digest is set.
type OCI struct {
	// Digest pins a manifest digest (sha256:<64 hex>).
	Digest string
	// Auth, when set, names the files holding registry credentials.
	Auth *OCIAuth
	// CAFile is a PEM file of CA certificates trusted beside the system's.
	CAFile string
	// Insecure allows plain HTTP to a registry that is not on loopback.
	Insecure bool
}

// OCIAuth names files holding registry credentials: exactly one of
// DockerConfigFile, PasswordFile (HTTP basic with Username) and TokenFile
// (a bearer token). They are re-read on every poll.
type OCIAuth struct {
	DockerConfigFile string
	Username         string
	PasswordFile     string
	TokenFile        string
}

// ociSource is what a Source that follows an OCI artifact keeps between
// polls.
type ociSource struct {
	spec    OCI
	repo    name.Repository
	pullers pullerCache
}

var ociDigestRE = regexp.MustCompile(`^sha256:[0-9a-f]{64}$`)

// newOCI is New for a Spec whose OCI section is set.
func newOCI(src Spec, opts Options) (*Source, error) {
	field := func(f string) string { return fmt.Sprintf("sources[%s].oci.%s", src.Name, f) }
	repo, err := parseOCIURL(src.URL, src.OCI.Insecure)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", field("url"), err)
	}
	s := &Source{spec: src, name: src.Name, url: src.URL, displayURL: "oci://" + repo.Name(),
		oci: &ociSource{spec: *src.OCI, repo: repo}}
	if err := s.setOCIRef(src, field); err != nil {
		return nil, err
	}
	if err := checkTiming(src, field); err != nil {
		return nil, err
	}
	if err := checkOCIAuth(src.OCI.Auth, field); err != nil {
		return nil, err
	}
	s.dir = filepath.Join(opts.CacheDir, src.Name)
	if err := os.MkdirAll(filepath.Join(s.dir, "trees"), 0o755); err != nil {
		return nil, fmt.Errorf("source %q: create cache directory: %w", src.Name, err)
	}
	return s, nil
}

// parseOCIURL turns oci://host/repository into a repository name. Which
// requests may go over plain HTTP is decided per request (plainHTTPGuard).
func parseOCIURL(raw string, insecure bool) (name.Repository, error) {
	u, err := url.Parse(raw)
	if err != nil {
		return name.Repository{}, errors.New("is not a valid URL")
	}
	if u.Scheme != "oci" || u.Host == "" || u.User != nil {
		return name.Repository{}, errors.New("must be oci://host[:port]/repository without credentials")
	}
	path := strings.TrimPrefix(u.Path, "/")
	if path == "" || strings.ContainsAny(path, ":@") {
		return name.Repository{}, errors.New("must name a repository and no tag or digest (set tag, semver or digest)")
	}
	var nopts []name.Option
	nopts = append(nopts, name.StrictValidation)
	if insecure {
		nopts = append(nopts, name.Insecure)
	}
	repo, err := name.NewRepository(u.Host+"/"+path, nopts...)
	if err != nil {
		return name.Repository{}, fmt.Errorf("repository %q: %w", u.Host+"/"+path, err)
	}
	return repo, nil
}

// isLoopbackHost reports whether host is localhost or a loopback address.
func isLoopbackHost(host string) bool {
	ip := net.ParseIP(host)
	return host == "localhost" || (ip != nil && ip.IsLoopback())
}

// setOCIRef checks that exactly one of tag, semver and digest is set, and
// well formed.
func (s *Source) setOCIRef(src Spec, field func(string) string) error {
	if countSet(src.Tag, src.Semver, src.OCI.Digest) != 1 || src.Branch != "" || src.Commit != "" {
		return fmt.Errorf("%s: set exactly one of tag, semver and digest", field("tag|semver|digest"))
	}
	switch {
	case src.Tag != "":
		s.kind, s.refName = refTag, src.Tag
		if _, err := name.NewTag(s.oci.repo.Name()+":"+src.Tag, name.StrictValidation); err != nil {
			return fmt.Errorf("%s: %q is not an OCI tag", field("tag"), src.Tag)
		}
	case src.Semver != "":
		return s.setSemver(src.Semver, field)
	default:
		s.kind, s.refName = refCommit, src.OCI.Digest
		if !ociDigestRE.MatchString(src.OCI.Digest) {
			return fmt.Errorf("%s: %q must be sha256: and 64 lower-case hex digits", field("digest"), src.OCI.Digest)
		}
	}
	return nil
}

// checkOCIAuth checks that one kind of credentials is set.
func checkOCIAuth(a *OCIAuth, field func(string) string) error {
	if a == nil {
		return nil
	}
	if countSet(a.DockerConfigFile, a.PasswordFile, a.TokenFile) != 1 {
		return fmt.Errorf("%s: set exactly one of dockerConfigFile, passwordFile (with username) and tokenFile", field("auth"))
	}
	if (a.Username != "") != (a.PasswordFile != "") {
		return fmt.Errorf("%s: username and passwordFile go together", field("auth.username"))
	}
	return nil
}

// ociRefString is refString for an OCI source.
func (s *Source) ociRefString() string {
	if s.kind == refCommit {
		return "digest " + s.refName
	}
	if s.kind == refSemver {
		return "semver " + s.refName
	}
	return "tag " + s.refName
}

// ociDescends is Descends for an OCI source: artifacts have no history, so
// every new digest is taken as the successor of the one before (a tag
// moved back to an older artifact is not told apart from a new one).
func ociDescends(context.Context, string, string) (Ancestry, error) {
	return AncestryDescends, nil
}
