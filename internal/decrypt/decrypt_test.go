package decrypt_test

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/decrypt"
	_ "syncd.dev/syncd/internal/decrypt/sopsfile" // Keys.Decrypt reads SOPS files through it
	"syncd.dev/syncd/internal/decrypt/sopstest"
)

const secretYAML = `apiVersion: v1
kind: Secret
metadata:
  name: db
  namespace: app
stringData:
  password: hunter2-plaintext
  port: "5432"
`

func TestDecrypt(t *testing.T) {
	id := sopstest.NewIdentity(t)
	pg := sopstest.NewPGPIdentity(t)
	tests := map[string]struct {
		plain      string
		opts       sopstest.Options
		keys       []byte
		wantPlain  string // a substring of the plain output
		wantValues []string
	}{
		"yaml, age, data only": {
			plain:      secretYAML,
			opts:       sopstest.Options{Age: []string{id.Recipient}, EncryptedRegex: "^(data|stringData)$"},
			keys:       id.KeysFile,
			wantPlain:  "password: hunter2-plaintext",
			wantValues: []string{"hunter2-plaintext", "5432"},
		},
		"yaml, everything encrypted": {
			plain:      "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: c\ndata:\n  k: v1-plaintext\n",
			opts:       sopstest.Options{Age: []string{id.Recipient}},
			keys:       id.KeysFile,
			wantPlain:  "k: v1-plaintext",
			wantValues: []string{"v1-plaintext"},
		},
		"json, age": {
			plain:      `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"j"},"stringData":{"token":"json-plaintext"}}`,
			opts:       sopstest.Options{Format: "json", Age: []string{id.Recipient}, EncryptedRegex: "^stringData$"},
			keys:       id.KeysFile,
			wantPlain:  `"token": "json-plaintext"`,
			wantValues: []string{"json-plaintext"},
		},
		"dotenv, age": {
			plain:      "USER=admin-plaintext\nPASS=env-plaintext\n",
			opts:       sopstest.Options{Format: "dotenv", Age: []string{id.Recipient}},
			keys:       id.KeysFile,
			wantPlain:  "PASS=env-plaintext",
			wantValues: []string{"admin-plaintext", "env-plaintext"},
		},
		"yaml, OpenPGP": {
			plain:      secretYAML,
			opts:       sopstest.Options{PGP: []*sopstest.PGPEntity{pg.Entity}, EncryptedRegex: "^stringData$"},
			keys:       pg.KeysFile,
			wantPlain:  "password: hunter2-plaintext",
			wantValues: []string{"hunter2-plaintext", "5432"},
		},
		"age and OpenPGP keys in one file, either recipient": {
			plain:      secretYAML,
			opts:       sopstest.Options{Age: []string{sopstest.NewIdentity(t).Recipient}, PGP: []*sopstest.PGPEntity{pg.Entity}, EncryptedRegex: "^stringData$"},
			keys:       append(append([]byte{}, id.KeysFile...), pg.KeysFile...),
			wantPlain:  "password: hunter2-plaintext",
			wantValues: []string{"hunter2-plaintext", "5432"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			format, _ := decrypt.FormatOf("x." + map[string]string{"": "yaml", "json": "json", "dotenv": "env"}[tc.opts.Format])
			enc := sopstest.Encrypt(t, []byte(tc.plain), tc.opts)
			if !decrypt.IsEncrypted(enc, format) {
				t.Fatalf("IsEncrypted = false for\n%s", enc)
			}
			if bytes.Contains(enc, []byte("plaintext")) {
				t.Fatalf("the fixture is not encrypted:\n%s", enc)
			}
			k, err := decrypt.ParseKeys(tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			res, err := k.Decrypt(enc, format)
			if err != nil {
				t.Fatal(err)
			}
			if !strings.Contains(string(res.Plain), tc.wantPlain) || strings.Contains(string(res.Plain), "sops") {
				t.Errorf("plain output lacks %q or keeps the sops metadata:\n%s", tc.wantPlain, res.Plain)
			}
			if diff := cmp.Diff(tc.wantValues, res.Values); diff != "" {
				t.Errorf("Values (-want +got):\n%s", diff)
			}
		})
	}
}

func TestDecryptRefuses(t *testing.T) {
	id := sopstest.NewIdentity(t)
	other := sopstest.NewIdentity(t)
	enc := sopstest.Encrypt(t, []byte(secretYAML), sopstest.Options{Age: []string{id.Recipient}, EncryptedRegex: "^stringData$"})
	tampered := bytes.Replace(enc, []byte("namespace: app"), []byte("namespace: evil"), 1)
	tests := map[string]struct {
		data    []byte
		keys    []byte
		wantErr string
	}{
		"another key": {
			data: enc, keys: other.KeysFile,
			wantErr: "no key in the app's keysFile decrypts it: it is encrypted for age " + id.Recipient,
		},
		"changed after encryption": {
			data: tampered, keys: id.KeysFile,
			wantErr: "MAC does not match",
		},
		"not sops": {
			data: []byte(secretYAML), keys: id.KeysFile,
			wantErr: "not a SOPS yaml file",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			k, err := decrypt.ParseKeys(tc.keys)
			if err != nil {
				t.Fatal(err)
			}
			_, err = k.Decrypt(tc.data, decrypt.FormatYAML)
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want it to contain %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "hunter2") {
				t.Fatalf("the error quotes a value: %v", err)
			}
		})
	}
}

func TestParseKeysRefuses(t *testing.T) {
	tests := map[string]struct {
		data, wantErr string
	}{
		"empty":         {"# nothing\n", "holds no key"},
		"ssh key":       {"ssh-ed25519 AAAA secret-looking\n", "line 1: not an age identity"},
		"malformed age": {"AGE-SECRET-KEY-1NOTAKEY\n", "line 1: malformed age identity"},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			_, err := decrypt.ParseKeys([]byte(tc.data))
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("err = %v, want %q", err, tc.wantErr)
			}
			if strings.Contains(err.Error(), "AAAA") || strings.Contains(err.Error(), "NOTAKEY") {
				t.Fatalf("the error quotes the file: %v", err)
			}
		})
	}
}
