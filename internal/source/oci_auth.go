package source

import (
	"crypto/sha256"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"net/http"
	"os"
	"slices"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"syncd.dev/syncd/internal/egress"
)

// ociCredentials are what one poll authenticates with: the authenticator,
// the secret strings to scrub from errors, and a fingerprint that tells
// whether the credentials changed since the puller was built.
type ociCredentials struct {
	auth    authn.Authenticator
	secrets []string
	key     string
}

// readOCICredentials reads the credential files named in oci.auth (an
// *Error of KindAuth when one cannot be read or holds nothing usable).
func (s *Source) readOCICredentials() (ociCredentials, error) {
	var ra registryAuth
	if a := s.oci.spec.Auth; a != nil {
		ra = registryAuth{section: "oci.auth", dockerConfigFile: a.DockerConfigFile, username: a.Username, passwordFile: a.PasswordFile, tokenFile: a.TokenFile, tokenField: "tokenFile"}
	}
	creds, err := ra.read(s.oci.repo.RegistryStr())
	if err != nil {
		return ociCredentials{}, s.newError(KindAuth, "read credentials", err, "")
	}
	return creds, nil
}

// registryAuth is a registry's credentials as a source's auth section
// names them: oci.auth of an OCI source, or helm.auth of a Helm
// repository at an oci:// URL. At most one of dockerConfigFile,
// passwordFile and tokenFile is set (config validation); none is
// anonymous.
type registryAuth struct {
	// section is the auth section's field in errors ("oci.auth").
	section          string
	dockerConfigFile string
	username         string
	passwordFile     string
	tokenFile        string
	// tokenField is tokenFile's name in the section.
	tokenField string
}

// read reads the files of a for registry (host[:port]). Errors name the
// field and file, never a credential.
func (a registryAuth) read(registry string) (ociCredentials, error) {
	var cfg authn.AuthConfig
	var err error
	switch {
	case a.dockerConfigFile != "":
		cfg, err = dockerConfigAuth(a.section+".dockerConfigFile", a.dockerConfigFile, registry)
	case a.passwordFile != "":
		var pw string
		pw, err = readSecretFile(a.passwordFile, a.section+".passwordFile")
		cfg = authn.AuthConfig{Username: a.username, Password: pw}
	case a.tokenFile != "":
		var tok string
		tok, err = readSecretFile(a.tokenFile, a.section+"."+a.tokenField)
		cfg = authn.AuthConfig{RegistryToken: tok}
	}
	if err != nil {
		return ociCredentials{}, err
	}
	return credentialsOf(cfg), nil
}

// credentialsOf is cfg as one poll sends it: the secrets to scrub (the
// basic-auth header's base64 form too) and the fingerprint of all of it.
func credentialsOf(cfg authn.AuthConfig) ociCredentials {
	if cfg == (authn.AuthConfig{}) {
		return ociCredentials{auth: authn.Anonymous, key: "anonymous"}
	}
	secrets := []string{cfg.Password, cfg.Auth, cfg.IdentityToken, cfg.RegistryToken}
	if cfg.Password != "" {
		secrets = append(secrets, base64.StdEncoding.EncodeToString([]byte(cfg.Username+":"+cfg.Password)))
	}
	h := sha256.New()
	for _, v := range append([]string{cfg.Username}, secrets...) {
		h.Write([]byte(v))
		h.Write([]byte{0})
	}
	return ociCredentials{auth: authn.FromConfig(cfg), secrets: nonEmpty(secrets), key: hex.EncodeToString(h.Sum(nil))}
}

func nonEmpty(vs []string) []string {
	return slices.DeleteFunc(vs, func(v string) bool { return v == "" })
}

// dockerConfig is the part of a ~/.docker/config.json syncd reads.
type dockerConfig struct {
	Auths       map[string]authn.AuthConfig `json:"auths"`
	CredsStore  string                      `json:"credsStore"`
	CredHelpers map[string]string           `json:"credHelpers"`
}

// dockerConfigAuth returns the credentials a Docker config file holds for
// registry (host[:port]); field names the file in errors
// ("oci.auth.dockerConfigFile"). Keys are matched the way docker login
// writes them: a bare host, or a URL whose host is the registry.
// Credential helpers are never run. Errors name hosts, never credentials.
func dockerConfigAuth(field, path, registry string) (authn.AuthConfig, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return authn.AuthConfig{}, fmt.Errorf("%s: %w", field, err)
	}
	var dc dockerConfig
	if err := json.Unmarshal(b, &dc); err != nil {
		// The JSON error may quote a credential: do not wrap it.
		return authn.AuthConfig{}, fmt.Errorf("%s: %s is not a Docker config file (JSON with an \"auths\" object)", field, path)
	}
	hosts := make([]string, 0, len(dc.Auths))
	for key, ac := range dc.Auths {
		host := dockerConfigHost(key)
		hosts = append(hosts, host)
		if host == registry || (registry == "index.docker.io" && host == "docker.io") {
			if ac == (authn.AuthConfig{}) {
				return authn.AuthConfig{}, fmt.Errorf("%s: the entry for %s in %s holds no credentials (a credential helper stores them elsewhere; syncd runs none)", field, registry, path)
			}
			return ac, nil
		}
	}
	slices.Sort(hosts)
	hint := "entries: " + strings.Join(hosts, ", ")
	if len(hosts) == 0 {
		hint = "it has no auths entries"
	}
	if _, ok := dc.CredHelpers[registry]; ok || dc.CredsStore != "" {
		hint += "; credential helpers (credsStore, credHelpers) are not run: write the credentials under auths"
	}
	return authn.AuthConfig{}, fmt.Errorf("%s: %s has no credentials for %s (%s)", field, path, registry, hint)
}

// dockerConfigHost is the host[:port] of an auths key ("ghcr.io",
// "https://index.docker.io/v1/").
func dockerConfigHost(key string) string {
	key = strings.TrimPrefix(strings.TrimPrefix(key, "https://"), "http://")
	host, _, _ := strings.Cut(key, "/")
	return host
}

// ociTransport is the HTTP transport of a registry client: the system's
// roots plus caFile, and no plain HTTP unless the registry is on loopback
// or insecure is set.
func ociTransport(caFile string, insecure bool) (http.RoundTripper, error) {
	base := egress.Transport()
	if caFile != "" {
		pem, err := os.ReadFile(caFile)
		if err != nil {
			return nil, fmt.Errorf("caFile: %w", err)
		}
		pool, err := x509.SystemCertPool()
		if err != nil || pool == nil {
			pool = x509.NewCertPool()
		}
		if !pool.AppendCertsFromPEM(pem) {
			return nil, fmt.Errorf("caFile: %s holds no PEM certificate", caFile)
		}
		base.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &plainHTTPGuard{next: base, allowed: insecure}, nil
}

// newOCIPuller is a registry client sending creds over ociTransport.
func newOCIPuller(creds ociCredentials, caFile string, insecure bool) (*remote.Puller, error) {
	tr, err := ociTransport(caFile, insecure)
	if err != nil {
		return nil, err
	}
	return remote.NewPuller(remote.WithAuth(creds.auth), remote.WithTransport(tr), remote.WithUserAgent("syncd"))
}

// errPlainHTTP is what a request over plain HTTP to a registry that is not
// on loopback fails with (go-containerregistry falls back to http for
// private-range addresses; syncd does not, unless oci.insecure is set).
var errPlainHTTP = errors.New("plain HTTP to a registry that is not on loopback is refused; use TLS (oci.caFile for a private CA) or set oci.insecure")

// plainHTTPGuard refuses plain-HTTP requests unless allowed.
type plainHTTPGuard struct {
	next    http.RoundTripper
	allowed bool
}

// RoundTrip sends req unless it is plain HTTP and that is not allowed.
func (g *plainHTTPGuard) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme == "http" && !g.allowed && !isLoopbackHost(req.URL.Hostname()) {
		return nil, errPlainHTTP
	}
	return g.next.RoundTrip(req)
}

// pullerCache keeps a source's registry client between polls while the
// credentials stay the same, so a poll whose tag did not move is one HEAD
// request (no ping, no token exchange).
type pullerCache struct {
	mu     sync.Mutex
	puller *remote.Puller
	// key fingerprints the puller's credentials (ociCredentials.key).
	key string
}

// get returns the cached puller when creds did not change, else a new one
// over ociTransport(caFile, insecure).
func (c *pullerCache) get(creds ociCredentials, caFile string, insecure bool) (*remote.Puller, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.puller != nil && c.key == creds.key {
		return c.puller, nil
	}
	p, err := newOCIPuller(creds, caFile, insecure)
	if err != nil {
		return nil, err
	}
	c.puller, c.key = p, creds.key
	return p, nil
}

// ociPuller returns the puller for these credentials, reusing the last
// one when they did not change.
func (s *Source) ociPuller(creds ociCredentials) (*remote.Puller, error) {
	o := s.oci
	p, err := o.pullers.get(creds, o.spec.CAFile, o.spec.Insecure)
	if err != nil {
		return nil, s.newError(KindAuth, "connect", fmt.Errorf("oci.%w", err), "")
	}
	return p, nil
}
