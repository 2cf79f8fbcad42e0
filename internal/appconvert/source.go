package appconvert

import (
	"fmt"
	"regexp"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/controller"
)

// Suffixes of the names of the Secrets converted objects name.
const (
	authSecretSuffix       = "-git-auth"
	helmAuthSecretSuffix   = "-helm-auth"
	ociAuthSecretSuffix    = "-oci-auth"
	verifySecretSuffix     = "-git-verify"
	decryptionSecretSuffix = "-sops-keys"
	kubeconfigSecretSuffix = "-kubeconfig"
)

// decryptionSecretKey is the key convert gives the SOPS keys in the
// Secret an App's decryption names (the controller reads every key).
const decryptionSecretKey = "keys"

// anySource converts one source of any kind into its object, added to
// the Conversion; the credentials' file paths are returned for the
// round trip.
func (c *Conversion) anySource(s config.Source, ns string) (controller.Source, controller.Credentials) {
	switch s.Kind() {
	case config.SourceHelm:
		src, creds := c.helmSource(s, ns)
		c.HelmSources = append(c.HelmSources, src)
		return controller.Source{Helm: src}, creds
	case config.SourceOCI:
		src, creds := c.ociSource(s, ns)
		c.OCISources = append(c.OCISources, src)
		return controller.Source{OCI: src}, creds
	}
	src, creds := c.source(s, ns)
	c.Sources = append(c.Sources, src)
	return controller.Source{Git: src}, creds
}

// helmSource converts a sources[].helm entry: its auth files become
// the keys of one Secret.
func (c *Conversion) helmSource(s config.Source, ns string) (*v1alpha1.HelmSource, controller.Credentials) {
	h := s.Helm
	src := &v1alpha1.HelmSource{
		TypeMeta:   typeMeta(v1alpha1.KindHelmSource),
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns},
		Spec:       v1alpha1.HelmSourceSpec{URL: h.URL, Interval: h.Interval},
	}
	a := h.Auth
	if a == nil {
		return src, controller.Credentials{}
	}
	creds := controller.Credentials{Username: a.Username, PasswordFile: a.PasswordFile, TokenFile: a.BearerTokenFile, DockerConfigFile: a.DockerConfigFile, CAFile: a.CAFile}
	name := s.Name + helmAuthSecretSuffix
	src.Spec.SecretRef = &v1alpha1.LocalObjectReference{Name: name}
	c.secretNote(v1alpha1.KindHelmSource, src.ObjectMeta, name, artifactKeys(creds))
	return src, creds
}

// ociSource converts a sources[].oci entry: its auth files and caFile
// become the keys of one Secret.
func (c *Conversion) ociSource(s config.Source, ns string) (*v1alpha1.OCISource, controller.Credentials) {
	o := s.OCI
	src := &v1alpha1.OCISource{
		TypeMeta:   typeMeta(v1alpha1.KindOCISource),
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns},
		Spec:       v1alpha1.OCISourceSpec{URL: o.URL, OCIRef: o.OCIRef, Insecure: o.Insecure},
	}
	creds := controller.Credentials{CAFile: o.CAFile}
	if a := o.Auth; a != nil {
		creds.Username, creds.PasswordFile, creds.TokenFile, creds.DockerConfigFile = a.Username, a.PasswordFile, a.TokenFile, a.DockerConfigFile
	}
	if creds == (controller.Credentials{}) {
		return src, creds
	}
	name := s.Name + ociAuthSecretSuffix
	src.Spec.SecretRef = &v1alpha1.LocalObjectReference{Name: name}
	c.secretNote(v1alpha1.KindOCISource, src.ObjectMeta, name, artifactKeys(creds))
	return src, creds
}

// artifactKeys are the Secret keys of a HelmSource's or an OCISource's
// credentials; username is a value of the config, printed as it is (a
// user name is not secret).
func artifactKeys(creds controller.Credentials) []secretKey {
	var keys []secretKey
	for _, k := range []secretKey{
		{key: v1alpha1.SecretKeyPassword, file: creds.PasswordFile},
		{key: v1alpha1.SecretKeyToken, file: creds.TokenFile},
		{key: v1alpha1.SecretKeyDockerConfig, file: creds.DockerConfigFile},
		{key: v1alpha1.SecretKeyCA, file: creds.CAFile},
	} {
		if k.file != "" {
			keys = append(keys, k)
		}
	}
	if creds.Username != "" {
		keys = append(keys, secretKey{key: v1alpha1.SecretKeyUsername, value: creds.Username})
	}
	return keys
}

// source converts one source; its credentials become secretRefs, and the
// file paths they came from are returned for the round trip.
func (c *Conversion) source(s config.Source, ns string) (*v1alpha1.GitSource, controller.Credentials) {
	g := s.Git
	src := &v1alpha1.GitSource{
		TypeMeta:   typeMeta(v1alpha1.KindGitSource),
		ObjectMeta: metav1.ObjectMeta{Name: s.Name, Namespace: ns},
		Spec:       v1alpha1.GitSourceSpec{URL: g.URL, GitRef: g.GitRef},
	}
	var creds controller.Credentials
	if a := g.Auth; a != nil {
		name := s.Name + authSecretSuffix
		src.Spec.SecretRef = &v1alpha1.LocalObjectReference{Name: name}
		creds = controller.Credentials{Username: a.Username, TokenFile: a.TokenFile, SSHKeyFile: a.SSHKeyFile, KnownHosts: a.KnownHostsFile}
		c.secretNote(v1alpha1.KindGitSource, src.ObjectMeta, name, authKeys(a))
	}
	if v := g.Verify; v != nil {
		name := s.Name + verifySecretSuffix
		src.Spec.Verify = &v1alpha1.GitVerify{Mode: v.Mode, SecretRef: v1alpha1.LocalObjectReference{Name: name}, AllowRewrites: v.AllowRewrites}
		creds.KeysFile = v.KeysFile
		c.secretNote(v1alpha1.KindGitSource, src.ObjectMeta, name, []secretKey{{key: v1alpha1.SecretKeyKeys, file: v.KeysFile}})
	}
	return src, creds
}

// secretKey is one key of a Secret to create: from a file (whose
// content is never read), or (file "") from a value of the config that
// is not secret, a user name, printed as it is.
type secretKey struct {
	key, file, value string
}

// authKeys are the Secret keys of a source's auth.
func authKeys(a *config.GitAuth) []secretKey {
	var keys []secretKey
	for _, k := range []secretKey{
		{key: v1alpha1.SecretKeyToken, file: a.TokenFile},
		{key: v1alpha1.SecretKeyIdentity, file: a.SSHKeyFile},
		{key: v1alpha1.SecretKeyKnownHosts, file: a.KnownHostsFile},
	} {
		if k.file != "" {
			keys = append(keys, k)
		}
	}
	if a.Username != "" {
		keys = append(keys, secretKey{key: v1alpha1.SecretKeyUsername, value: a.Username})
	}
	return keys
}

// secretNote records a Secret an object names: a comment above the
// object and a warning with the command that creates it. Only file
// paths are printed, never what the files hold.
func (c *Conversion) secretNote(kind string, obj metav1.ObjectMeta, name string, keys []secretKey) {
	cmd := createSecretCommand(obj.Namespace, name, keys)
	ref := kind + "/" + obj.Name
	c.Comments[ref] = append(c.Comments[ref], fmt.Sprintf("Secret %s/%s must exist before this %s is used: %s", obj.Namespace, name, kind, cmd))
	c.Warnings = append(c.Warnings, fmt.Sprintf("%s %s/%s names Secret %s/%s, which syncd convert does not create (it never reads credential files): %s", kind, obj.Namespace, obj.Name, obj.Namespace, name, cmd))
}

// createSecretCommand is the kubectl command line that creates Secret
// ns/name with keys. File paths and values are quoted for the shell, so
// that the line can be pasted as it is whatever the config's paths hold
// (a space, a quote, a $); the namespace, the name and the keys are
// Kubernetes names, which need no quoting.
func createSecretCommand(ns, name string, keys []secretKey) string {
	args := []string{"kubectl", "-n", ns, "create", "secret", "generic", name}
	for _, k := range keys {
		if k.file != "" {
			args = append(args, "--from-file="+k.key+"="+shellWord(k.file))
		} else {
			args = append(args, "--from-literal="+k.key+"="+shellWord(k.value))
		}
	}
	return strings.Join(args, " ")
}

// shellSafeRE matches a word the shell reads as it is.
var shellSafeRE = regexp.MustCompile(`^[A-Za-z0-9@%+=:,./_-]+$`)

// shellWord quotes s for a POSIX shell unless it needs none, so that
// the command printed can be pasted as it is.
func shellWord(s string) string {
	if shellSafeRE.MatchString(s) {
		return s
	}
	return "'" + strings.ReplaceAll(s, "'", `'\''`) + "'"
}
