package controller

import (
	"context"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/identity"
)

// SecretReader reads the data of a Secret.
type SecretReader interface {
	SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error)
}

// ClientSecrets reads Secrets through a clientset.
type ClientSecrets struct{ Client kubernetes.Interface }

var _ SecretReader = ClientSecrets{}

// SecretData returns the Secret's data.
func (c ClientSecrets) SecretData(ctx context.Context, namespace, name string) (map[string][]byte, error) {
	s, err := c.Client.CoreV1().Secrets(namespace).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		return nil, err
	}
	return s.Data, nil
}

// MissingSecretError is a Secret a source or an App names that does not
// exist or lacks a key.
type MissingSecretError struct {
	// Object is the referrer: "GitSource ns/name", "HelmSource ns/name",
	// "OCISource ns/name" or "App ns/name".
	Object      string
	Secret, Key string
	// Reader is the user the Secret was read as when not syncd (an
	// App's service account), and Whose says whose account it is, in
	// words (default: the App's, which reads the Secrets it and its
	// source name).
	Reader, Whose string
	Err           error
}

func (e *MissingSecretError) Error() string {
	if e.Reader != "" && apierrors.IsForbidden(e.Err) {
		whose := e.Whose
		if whose == "" {
			whose = "the App's service account, which reads the Secrets of its own namespace that the App and its source name"
		}
		return fmt.Sprintf("%s: Secret %s cannot be read as %s, %s: grant it get on Secret %s (a Role and RoleBinding), or name a Secret it may read", e.Object, e.Secret, e.Reader, whose, e.Secret)
	}
	if e.Key != "" {
		return fmt.Sprintf("%s: Secret %s has no key %q; add it (docs/apps.md lists the keys)", e.Object, e.Secret, e.Key)
	}
	kind, _, _ := strings.Cut(e.Object, " ")
	return fmt.Sprintf("%s: Secret %s cannot be read: %v; create it in the %s's namespace", e.Object, e.Secret, e.Err, kind)
}

func (e *MissingSecretError) Unwrap() error { return e.Err }

// credentialWriter writes a source's Secret data to files (mode 0600
// in a 0700 directory per source), where the source package reads
// them on every poll. Values are never logged or returned.
type credentialWriter struct {
	secrets SecretReader
	dir     string
	// reader is the user secrets reads as when it is not syncd (an App's
	// service account), and whose says whose account it is, for errors
	// (MissingSecretError.Whose).
	reader, whose string
}

// credentialsFor is the credentialWriter of the Secrets an App reads in
// namespace ns (its source's, or its own for spec.decryption). An App
// with a service account (serviceAccountName, or the operator's default)
// reads the Secrets of its own namespace as that account: whoever may
// create Apps and sources there names them, and through syncd's identity
// they would send any Secret with a token key to a Git server of their
// choosing, or decrypt with keys they may not read. A source of another
// namespace (allowed by --allow-cross-namespace-sources, which shares its
// credentials) is read as syncd, as is every Secret of an App without a
// service account (it runs as syncd).
func (c *Controller) credentialsFor(app *v1alpha1.App, ns string) (credentialWriter, error) {
	if ns != app.Namespace {
		return c.creds, nil
	}
	return c.credentialsAs(identity.Tenant{App: app.Namespace + "/" + app.Name, Namespace: app.Namespace, ServiceAccount: app.Spec.ServiceAccountName})
}

// credentialsAs is the credentialWriter that reads as ten: its service
// account by impersonation, or syncd for a tenant without one.
func (c *Controller) credentialsAs(ten identity.Tenant) (credentialWriter, error) {
	w := c.creds
	user := identity.User(ten)
	if user == "" {
		return w, nil
	}
	cfg, err := identity.Config(c.opts.Cluster.Config, ten)
	if err != nil {
		return w, err
	}
	cs, err := kubernetes.NewForConfig(cfg)
	if err != nil {
		return w, fmt.Errorf("App %s: a client as %s: %w", ten.App, user, err)
	}
	w.secrets, w.reader = ClientSecrets{Client: cs}, user
	return w, nil
}

// write reads the source's Secrets and writes the keys its kind uses; a
// key the source needs and the Secret lacks is a MissingSecretError.
func (w credentialWriter) write(ctx context.Context, src Source) (Credentials, error) {
	if src.Git != nil {
		return w.writeGit(ctx, src)
	}
	return w.writeArtifact(ctx, src)
}

// sourceDir is the directory of a source's credential files: a
// GitSource's <namespace>/<name>, as before the other kinds; a
// HelmSource's .helmsource/<namespace>/<name> and an OCISource's
// .ocisource/<namespace>/<name> (no namespace starts with a dot).
func (w credentialWriter) sourceDir(src Source) string {
	m := src.Meta()
	if src.Git != nil {
		return filepath.Join(w.dir, m.Namespace, m.Name)
	}
	return filepath.Join(w.dir, "."+strings.ToLower(src.Kind()), m.Namespace, m.Name)
}

// writeGit writes a GitSource's keys: token (and username), identity
// and known_hosts, and verify's keys.
func (w credentialWriter) writeGit(ctx context.Context, src Source) (Credentials, error) {
	var creds Credentials
	dir, spec := w.sourceDir(src), src.Git.Spec
	if spec.SecretRef != nil {
		name := spec.SecretRef.Name
		data, err := w.read(ctx, src, name)
		if err != nil {
			return creds, err
		}
		creds.Username = string(data[v1alpha1.SecretKeyUsername])
		if err := w.files(src, dir, name, data, map[string]*string{
			v1alpha1.SecretKeyToken: &creds.TokenFile, v1alpha1.SecretKeyIdentity: &creds.SSHKeyFile, v1alpha1.SecretKeyKnownHosts: &creds.KnownHosts,
		}); err != nil {
			return creds, err
		}
	}
	if spec.Verify != nil {
		name := spec.Verify.SecretRef.Name
		data, err := w.read(ctx, src, name)
		if err != nil {
			return creds, err
		}
		if creds.KeysFile, err = w.file(src, dir, name, data, v1alpha1.SecretKeyKeys, true); err != nil {
			return creds, err
		}
	}
	return creds, nil
}

// artifactKeys are the keys of a HelmSource's or an OCISource's Secret,
// beside username, which is read as a value.
var artifactKeys = []string{v1alpha1.SecretKeyPassword, v1alpha1.SecretKeyToken, v1alpha1.SecretKeyDockerConfig, v1alpha1.SecretKeyCA}

// writeArtifact writes a HelmSource's or an OCISource's keys: password
// (and username), token, .dockerconfigjson and ca.crt. A Secret with
// none of them is refused: the source would be read without the
// credentials its owner meant it to have.
func (w credentialWriter) writeArtifact(ctx context.Context, src Source) (Credentials, error) {
	var creds Credentials
	ref := src.secretRef()
	if ref == nil {
		return creds, nil
	}
	data, err := w.read(ctx, src, ref.Name)
	if err != nil {
		return creds, err
	}
	if !slices.ContainsFunc(append(artifactKeys, v1alpha1.SecretKeyUsername), func(k string) bool { _, ok := data[k]; return ok }) {
		return creds, fmt.Errorf("%s: Secret %s has none of the keys the source reads (username and password, token, %s, %s); add them (docs/sources.md)",
			src, ref.Name, v1alpha1.SecretKeyDockerConfig, v1alpha1.SecretKeyCA)
	}
	creds.Username = string(data[v1alpha1.SecretKeyUsername])
	err = w.files(src, w.sourceDir(src), ref.Name, data, map[string]*string{
		v1alpha1.SecretKeyPassword: &creds.PasswordFile, v1alpha1.SecretKeyToken: &creds.TokenFile,
		v1alpha1.SecretKeyDockerConfig: &creds.DockerConfigFile, v1alpha1.SecretKeyCA: &creds.CAFile,
	})
	return creds, err
}

func (w credentialWriter) read(ctx context.Context, src Source, name string) (map[string][]byte, error) {
	data, err := w.secrets.SecretData(ctx, src.Meta().Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = fmt.Errorf("not found")
		}
		return nil, &MissingSecretError{Object: src.String(), Secret: name, Reader: w.reader, Whose: w.whose, Err: err}
	}
	return data, nil
}

// files writes the optional keys of paths (key → where its file's path
// goes), in key order.
func (w credentialWriter) files(src Source, dir, secret string, data map[string][]byte, paths map[string]*string) error {
	for _, key := range slices.Sorted(maps.Keys(paths)) {
		p, err := w.file(src, dir, secret, data, key, false)
		if err != nil {
			return err
		}
		*paths[key] = p
	}
	return nil
}

// file writes one key to dir/<secret>.<key> and returns its path; ""
// when the Secret has no such key and it is not required. The file is
// replaced atomically, so a poll never reads half a key.
func (w credentialWriter) file(src Source, dir, secret string, data map[string][]byte, key string, required bool) (string, error) {
	value, ok := data[key]
	if !ok {
		if required {
			return "", &MissingSecretError{Object: src.String(), Secret: secret, Key: key}
		}
		return "", nil
	}
	path, err := writePrivate(dir, secret+"."+key, value)
	if err != nil {
		return "", fmt.Errorf("%s: write key %s of Secret %s: %w", src, key, secret, err)
	}
	return path, nil
}

// writePrivate replaces dir/name with value, atomically, mode 0600 in a
// 0700 directory, and returns its path.
func writePrivate(dir, name string, value []byte) (string, error) {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", err
	}
	path := filepath.Join(dir, name)
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return "", err
	}
	_, err = tmp.Write(value)
	if cerr := tmp.Close(); err == nil {
		err = cerr
	}
	if err == nil {
		err = os.Rename(tmp.Name(), path)
	}
	if err != nil {
		_ = os.Remove(tmp.Name())
		return "", err
	}
	return path, nil
}

// decryptionDir is where Apps' decryption keys are written below the
// credentials directory (sources use <namespace>/<name> below it,
// sourceDir).
const decryptionDir = ".decryption"

// writeDecryptionKeys reads the Secret an App's spec.decryption names
// and writes every key's value, in key order, to one keys file (mode
// 0600) that the render reads; "" for an App without decryption. A
// Secret that is missing or empty is a MissingSecretError. The values
// are never logged or returned.
func (w credentialWriter) writeDecryptionKeys(ctx context.Context, app *v1alpha1.App) (string, error) {
	d := app.Spec.Decryption
	if d == nil {
		return "", nil
	}
	object := "App " + app.Namespace + "/" + app.Name
	name := d.SecretRef.Name
	data, err := w.secrets.SecretData(ctx, app.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = fmt.Errorf("not found")
		}
		return "", &MissingSecretError{Object: object, Secret: name, Reader: w.reader, Err: err}
	}
	if len(data) == 0 {
		return "", &MissingSecretError{Object: object, Secret: name, Err: fmt.Errorf("it has no keys (it should hold age identities or armored OpenPGP private keys)")}
	}
	var keys []byte
	for _, k := range slices.Sorted(maps.Keys(data)) {
		keys = append(append(keys, data[k]...), '\n')
	}
	dir := filepath.Join(w.dir, decryptionDir, app.Namespace, app.Name)
	path, err := writePrivate(dir, "keys", keys)
	if err != nil {
		return "", fmt.Errorf("%s: write the keys of Secret %s: %w", object, name, err)
	}
	return path, nil
}

// WriteDecryptionKeys writes the keys of the Secret an App's
// spec.decryption names to a keys file below dir, as the controller does
// (for syncd plan --app, which previews an App with decryption); "" for
// an App without decryption. Set Credentials.DecryptionKeysFile to it
// before Translate.
func WriteDecryptionKeys(ctx context.Context, secrets SecretReader, dir string, app *v1alpha1.App) (string, error) {
	return credentialWriter{secrets: secrets, dir: dir}.writeDecryptionKeys(ctx, app)
}
