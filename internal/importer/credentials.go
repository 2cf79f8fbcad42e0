package importer

import (
	"fmt"
	"path"
	"strings"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// withoutCredentials returns raw without the credentials its userinfo
// holds, and whether it held any. Over http(s) and oci the whole
// userinfo goes (a user name alone may be a token,
// https://TOKEN@host/...); over ssh only a password goes, the user name
// being the login (ssh://git@host/...). An scp-like URL (git@host:path)
// holds no password. The rest of the URL is kept as written.
func withoutCredentials(raw string) (string, bool) {
	scheme, rest, ok := strings.Cut(raw, "://")
	if !ok {
		return raw, false
	}
	end := strings.IndexAny(rest, "/?#")
	if end < 0 {
		end = len(rest)
	}
	at := strings.LastIndex(rest[:end], "@")
	if at < 0 {
		return raw, false
	}
	userinfo, hostAndPath := rest[:at], rest[at+1:]
	if strings.EqualFold(scheme, "ssh") {
		user, _, hasPassword := strings.Cut(userinfo, ":")
		if !hasPassword {
			return raw, false
		}
		return scheme + "://" + user + "@" + hostAndPath, true
	}
	return scheme + "://" + hostAndPath, true
}

// isSSHURL reports whether a Git URL is fetched over ssh: ssh://, or
// scp-like (git@host:org/repo.git).
func isSSHURL(url string) bool {
	if scheme, _, ok := strings.Cut(url, "://"); ok {
		return strings.EqualFold(scheme, "ssh")
	}
	return strings.Contains(url, ":")
}

// source names an imported source whose credentials a warning speaks
// of: its kind, namespace and name, and its URL (without credentials).
type source struct {
	kind, namespace, name, url string
}

// authSecretName is the Secret a source that needs credentials names
// when the imported object names none: <name>-git-auth, -helm-auth or
// -oci-auth, as syncd convert names them.
func (s source) authSecretName() string {
	return s.name + "-" + strings.ToLower(strings.TrimSuffix(s.kind, "Source")) + "-auth"
}

// requireSecret makes the source name a Secret for its credentials
// (*ref, or a new one when it names none) and returns it.
func (s source) requireSecret(ref **v1alpha1.LocalObjectReference) string {
	if *ref == nil {
		*ref = &v1alpha1.LocalObjectReference{Name: s.authSecretName()}
	}
	return (*ref).Name
}

// removedCredentials warns that the URL at field of d held credentials,
// which the import removed (never printing them), and says where they
// go instead: the Secret secret, in the words of the output form.
func (im *importer) removedCredentials(d Document, field string, s source, secret string) {
	im.warn(d, field, "the URL embeds credentials, which the import removed from it (they are not printed, and syncd refuses a URL that holds them): %s", im.credentialAdvice(s, secret))
}

// credentialAdvice says where the credentials of s go: the keys of
// Secret secret, which the object names in spec.secretRef, or, in a
// syncd.yaml, the files of that Secret mounted below SecretsDir.
func (im *importer) credentialAdvice(s source, secret string) string {
	dir := path.Join(SecretsDir, secret)
	if im.opts.Form == ConfigForm {
		return fmt.Sprintf("source %s of the syncd.yaml reads them from files below %s (mount a Secret %s there): put %s", s.name, dir, secret, credentialFiles(s, dir))
	}
	return fmt.Sprintf("put %s of Secret %s/%s, which %s %s/%s names in spec.secretRef", credentialKeys(s), s.namespace, secret, s.kind, s.namespace, s.name)
}

// credentialKeys are the keys of the Secret a source of s's kind reads.
func credentialKeys(s source) string {
	switch {
	case s.kind == v1alpha1.KindGitSource && isSSHURL(s.url):
		return "the SSH private key in key identity and the server's host keys in key known_hosts"
	case s.kind == v1alpha1.KindGitSource:
		return "the password or token in key token and the user name in key username"
	}
	return "the user name and password in keys username and password (or a token in key token)"
}

// credentialFiles are the files of dir the syncd.yaml's source of s's
// kind reads (as Result.Config writes them).
func credentialFiles(s source, dir string) string {
	switch s.kind {
	case v1alpha1.KindGitSource:
		if isSSHURL(s.url) {
			return fmt.Sprintf("the SSH private key in %s and the server's host keys in %s (auth.sshKeyFile and auth.knownHostsFile)", path.Join(dir, v1alpha1.SecretKeyIdentity), path.Join(dir, v1alpha1.SecretKeyKnownHosts))
		}
		return fmt.Sprintf("the password or token in %s (auth.tokenFile); set auth.username to the user name if the server checks it", path.Join(dir, v1alpha1.SecretKeyToken))
	case v1alpha1.KindHelmSource:
		return fmt.Sprintf("the password in %s (auth.passwordFile); set auth.username to the user name", path.Join(dir, v1alpha1.SecretKeyPassword))
	}
	return fmt.Sprintf("a Docker config for the registry in %s (auth.dockerConfigFile)", path.Join(dir, v1alpha1.SecretKeyDockerConfig))
}

// moveCredentials is for a source whose URL held credentials, which
// withoutCredentials removed: the source names a Secret for them (*ref,
// or a new one), and a warning about field of d says what to put in it.
func (im *importer) moveCredentials(d Document, field string, s source, ref **v1alpha1.LocalObjectReference) {
	im.removedCredentials(d, field, s, s.requireSecret(ref))
}
