package controller

import (
	"context"
	"fmt"
	"os"
	"path/filepath"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/kubernetes"

	"syncd.dev/syncd/internal/api/v1alpha1"
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

// MissingSecretError is a Secret a GitSource names that does not exist
// or lacks a key.
type MissingSecretError struct {
	Source, Secret, Key string
	Err                 error
}

func (e *MissingSecretError) Error() string {
	if e.Key != "" {
		return fmt.Sprintf("GitSource %s: Secret %s has no key %q; add it (docs/apps.md lists the keys)", e.Source, e.Secret, e.Key)
	}
	return fmt.Sprintf("GitSource %s: Secret %s cannot be read: %v; create it in the GitSource's namespace", e.Source, e.Secret, e.Err)
}

func (e *MissingSecretError) Unwrap() error { return e.Err }

// credentialWriter writes a GitSource's Secret data to files (mode 0600
// in a 0700 directory per GitSource), where the source package reads
// them on every poll. Values are never logged or returned.
type credentialWriter struct {
	secrets SecretReader
	dir     string
}

// write reads the GitSource's Secrets and writes the keys its URL kind
// uses; a key the kind needs and the Secret lacks is a
// MissingSecretError.
func (w credentialWriter) write(ctx context.Context, src *v1alpha1.GitSource) (Credentials, error) {
	var creds Credentials
	dir := filepath.Join(w.dir, src.Namespace, src.Name)
	if src.Spec.SecretRef != nil {
		data, err := w.read(ctx, src, src.Spec.SecretRef.Name)
		if err != nil {
			return creds, err
		}
		creds.Username = string(data[v1alpha1.SecretKeyUsername])
		if creds.TokenFile, err = w.file(src, dir, src.Spec.SecretRef.Name, data, v1alpha1.SecretKeyToken, false); err != nil {
			return creds, err
		}
		if creds.SSHKeyFile, err = w.file(src, dir, src.Spec.SecretRef.Name, data, v1alpha1.SecretKeyIdentity, false); err != nil {
			return creds, err
		}
		if creds.KnownHosts, err = w.file(src, dir, src.Spec.SecretRef.Name, data, v1alpha1.SecretKeyKnownHosts, false); err != nil {
			return creds, err
		}
	}
	if src.Spec.Verify != nil {
		name := src.Spec.Verify.SecretRef.Name
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

func (w credentialWriter) read(ctx context.Context, src *v1alpha1.GitSource, name string) (map[string][]byte, error) {
	data, err := w.secrets.SecretData(ctx, src.Namespace, name)
	if err != nil {
		if apierrors.IsNotFound(err) {
			err = fmt.Errorf("not found")
		}
		return nil, &MissingSecretError{Source: src.Namespace + "/" + src.Name, Secret: name, Err: err}
	}
	return data, nil
}

// file writes one key to dir/<secret>.<key> and returns its path; ""
// when the Secret has no such key and it is not required. The file is
// replaced atomically, so a poll never reads half a key.
func (w credentialWriter) file(src *v1alpha1.GitSource, dir, secret string, data map[string][]byte, key string, required bool) (string, error) {
	value, ok := data[key]
	if !ok {
		if required {
			return "", &MissingSecretError{Source: src.Namespace + "/" + src.Name, Secret: secret, Key: key}
		}
		return "", nil
	}
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return "", fmt.Errorf("GitSource %s/%s: credentials directory: %w", src.Namespace, src.Name, err)
	}
	path := filepath.Join(dir, secret+"."+key)
	tmp, err := os.CreateTemp(dir, ".tmp-")
	if err != nil {
		return "", fmt.Errorf("GitSource %s/%s: write key %s of Secret %s: %w", src.Namespace, src.Name, key, secret, err)
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
		return "", fmt.Errorf("GitSource %s/%s: write key %s of Secret %s: %w", src.Namespace, src.Name, key, secret, err)
	}
	return path, nil
}
