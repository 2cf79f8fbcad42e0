package source

import (
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"errors"
	"fmt"
	"net/http"
	"os"
	"strings"

	"syncd.dev/syncd/internal/egress"
)

// helmCredentials are what one poll of a Helm repository sends: the
// Authorization header (empty: none) and the values scrubbed from error
// messages.
type helmCredentials struct {
	header  string
	secrets []string
	caFile  string
}

// readHelmCredentials reads helm.auth's files (with the Git sources'
// readSecretFile). Errors name the field and file, never the content.
func (r *HelmRepo) readHelmCredentials() (helmCredentials, error) {
	a := r.spec.Auth
	if a == nil {
		return helmCredentials{}, nil
	}
	fail := func(err error) (helmCredentials, error) {
		return helmCredentials{}, r.newError(KindAuth, "read credentials", err, "make the file readable by syncd")
	}
	c := helmCredentials{caFile: a.CAFile}
	switch {
	case a.PasswordFile != "":
		pw, err := readSecretFile(a.PasswordFile, "helm.auth.passwordFile")
		if err != nil {
			return fail(err)
		}
		basic := base64.StdEncoding.EncodeToString([]byte(a.Username + ":" + pw))
		c.header, c.secrets = "Basic "+basic, []string{pw, basic}
	case a.BearerTokenFile != "":
		tok, err := readSecretFile(a.BearerTokenFile, "helm.auth.bearerTokenFile")
		if err != nil {
			return fail(err)
		}
		c.header, c.secrets = "Bearer "+tok, []string{tok}
	}
	return c, nil
}

// helmClient returns the HTTP client of one poll: TLS trusting caFile
// when set, credentials added only to requests for the repository's own
// scheme, host and port (see authTransport), and redirects refused when
// they go from https to http.
func (r *HelmRepo) helmClient(c helmCredentials) (*http.Client, error) {
	tr := egress.Transport()
	if c.caFile != "" {
		pool, err := readCAFile(c.caFile)
		if err != nil {
			return nil, r.newError(KindAuth, "read CA", fmt.Errorf("helm.auth.caFile %s: %w", c.caFile, err), "write PEM certificates to the file")
		}
		tr.TLSClientConfig = &tls.Config{RootCAs: pool, MinVersion: tls.VersionTLS12}
	}
	return &http.Client{
		Transport:     &authTransport{next: tr, scheme: r.base.Scheme, host: r.base.Host, header: c.header},
		CheckRedirect: refuseDowngrade,
	}, nil
}

// readCAFile reads a PEM bundle into a pool.
func readCAFile(file string) (*x509.CertPool, error) {
	pem, err := os.ReadFile(file)
	if err != nil {
		return nil, err
	}
	pool := x509.NewCertPool()
	if !pool.AppendCertsFromPEM(pem) {
		return nil, errors.New("holds no PEM certificate")
	}
	return pool, nil
}

// refuseDowngrade stops a redirect chain that leaves https for http, or
// that is longer than 10 hops.
func refuseDowngrade(req *http.Request, via []*http.Request) error {
	if len(via) >= 10 {
		return errors.New("stopped after 10 redirects")
	}
	if via[0].URL.Scheme == "https" && req.URL.Scheme != "https" {
		return errors.New("refused a redirect from https to plain http")
	}
	return nil
}

// authTransport adds the Authorization header to requests whose scheme,
// host and port are the repository's, and to no other: a chart URL on
// another host, or a redirect there, gets no credentials. The header is
// set on a copy of the request, so the client never carries it into a
// redirect itself.
type authTransport struct {
	next         http.RoundTripper
	scheme, host string
	header       string
}

// sameOrigin is the rule for sending credentials.
func (t *authTransport) sameOrigin(req *http.Request) bool {
	return strings.EqualFold(req.URL.Scheme, t.scheme) && strings.EqualFold(req.URL.Host, t.host)
}

// RoundTrip implements http.RoundTripper.
func (t *authTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if t.header == "" || !t.sameOrigin(req) {
		return t.next.RoundTrip(req)
	}
	req = req.Clone(req.Context())
	req.Header.Set("Authorization", t.header)
	return t.next.RoundTrip(req)
}
