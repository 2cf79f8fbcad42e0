package controller

import (
	"context"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/decrypt/sopstest"
)

// TestDecryptionKeysFromSecret: an App whose files are SOPS-encrypted
// for an age and an OpenPGP recipient decrypts them with the keys of a
// Secret of its namespace (one key each, Flux's .agekey/.asc names);
// without the Secret it is SecretNotFound and applies nothing, and the
// plaintext is never in its status.
func TestDecryptionKeysFromSecret(t *testing.T) {
	r := newRig(t, "1h")
	age, pgp := sopstest.NewIdentity(t), sopstest.NewPGPIdentity(t)
	plain := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: sealed\ndata:\n  value: plaintext-42\n"
	agePart := sopstest.Encrypt(t, []byte(plain), sopstest.Options{Age: []string{age.Recipient}, EncryptedRegex: "^data$"})
	pgpPart := sopstest.Encrypt(t, []byte(strings.Replace(plain, "sealed", "sealed-pgp", 1)), sopstest.Options{PGP: []*sopstest.PGPEntity{pgp.Entity}, EncryptedRegex: "^data$"})
	next, err := r.repo.Commit("encrypted", map[string][]byte{"sops/age.yaml": agePart, "sops/pgp.yaml": pgpPart})
	if err != nil {
		t.Fatal(err)
	}
	r.app("sops", "sops", ", decryption: {provider: sops, secretRef: {name: sops-keys}}")
	missing := r.waitApp("sops", "SecretNotFound", func(a *v1alpha1.App) bool {
		c := ready(a)
		return c != nil && c.Reason == string(v1alpha1.ReasonSecretNotFound)
	})
	if c := ready(missing); !strings.Contains(c.Message, "Secret sops-keys") {
		t.Errorf("Ready = %+v, want the Secret named", c)
	}
	sec := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "sops-keys"}, Data: map[string][]byte{"identity.agekey": age.KeysFile, "private.asc": pgp.KeysFile}}
	if _, err := env.Clientset(t).CoreV1().Secrets(r.ns).Create(context.Background(), sec, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	app := r.waitReady("sops", next)
	for _, name := range []string{"sealed", "sealed-pgp"} {
		if v, err := r.configMapValue(name); err != nil || v != "plaintext-42" {
			t.Errorf("ConfigMap %s: value %q, %v; want the decrypted plaintext-42", name, v, err)
		}
	}
	for _, c := range app.Status.Conditions {
		if strings.Contains(c.Message, "plaintext-42") {
			t.Errorf("condition %s shows the decrypted value: %s", c.Type, c.Message)
		}
	}
}
