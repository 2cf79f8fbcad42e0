package source

import (
	"encoding/base64"
	"fmt"
	"net"
	"net/url"
	"os"
	"strings"

	"github.com/go-git/go-git/v5/plumbing/transport"
	githttp "github.com/go-git/go-git/v5/plumbing/transport/http"
	gitssh "github.com/go-git/go-git/v5/plumbing/transport/ssh"
)

// credentials are read from the files named in git.auth on every poll.
type credentials struct {
	auth    transport.AuthMethod
	secrets []string // values scrubbed from error messages
}

// readCredentials reads git.auth's files. Errors name the field and file
// but never the content.
func (s *Source) readCredentials() (credentials, error) {
	a := s.spec.Auth
	if a == nil {
		return credentials{}, nil
	}
	fail := func(field, file string, err error) (credentials, error) {
		return credentials{}, s.newError(KindAuth, "read credentials",
			fmt.Errorf("git.auth.%s %s: %w", field, file, err),
			"make the file readable by syncd")
	}
	failRead := func(err error) (credentials, error) {
		return credentials{}, s.newError(KindAuth, "read credentials", err, "make the file readable by syncd")
	}
	switch {
	case a.TokenFile != "":
		tok, err := readSecretFile(a.TokenFile, "git.auth.tokenFile")
		if err != nil {
			return failRead(err)
		}
		user := a.Username
		if user == "" {
			user = "git"
		}
		// A server may echo the Authorization header (base64 of
		// user:token) in an error body: scrub that form too.
		basic := base64.StdEncoding.EncodeToString([]byte(user + ":" + tok))
		return credentials{auth: &githttp.BasicAuth{Username: user, Password: tok}, secrets: []string{tok, basic}}, nil
	case a.SSHKeyFile != "":
		user := a.Username
		if user == "" {
			user = sshUser(s.url)
		}
		keys, err := gitssh.NewPublicKeysFromFile(user, a.SSHKeyFile, "")
		if err != nil {
			// Parse errors from x/crypto do not include key material.
			return fail("sshKeyFile", a.SSHKeyFile, err)
		}
		db, err := gitssh.NewKnownHostsDb(a.KnownHostsFile)
		if err != nil {
			return fail("knownHostsFile", a.KnownHostsFile, err)
		}
		keys.HostKeyCallback = db.HostKeyCallback()
		keys.HostKeyAlgorithms = db.HostKeyAlgorithms(sshHostPort(s.url))
		return credentials{auth: keys}, nil
	}
	return credentials{}, nil
}

// sshUser returns the user in an ssh URL, default "git".
func sshUser(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme == "ssh" && u.User != nil && u.User.Username() != "" {
		return u.User.Username()
	}
	if m := scpLikeRE.FindStringSubmatch(raw); m != nil && m[1] != "" {
		return strings.TrimSuffix(m[1], "@")
	}
	return "git"
}

// sshHostPort returns host:port the way knownhosts looks it up.
func sshHostPort(raw string) string {
	if u, err := url.Parse(raw); err == nil && u.Scheme == "ssh" {
		port := u.Port()
		if port == "" {
			port = "22"
		}
		return net.JoinHostPort(u.Hostname(), port)
	}
	if m := scpLikeRE.FindStringSubmatch(raw); m != nil {
		return net.JoinHostPort(m[2], "22")
	}
	return raw
}

// readSecretFile reads a credential file: its content without surrounding
// white space, which must be at least 4 characters long (shorter secrets
// could not be scrubbed from messages, see scrub). Errors name field and
// never hold the content. Git, OCI and Helm repository sources read their
// credentials with it.
func readSecretFile(file, field string) (string, error) {
	b, err := os.ReadFile(file)
	if err != nil {
		return "", fmt.Errorf("%s: %w", field, err)
	}
	secret := strings.TrimSpace(string(b))
	if len(secret) < 4 {
		return "", fmt.Errorf("%s: %s is empty or shorter than 4 characters", field, file)
	}
	return secret, nil
}
