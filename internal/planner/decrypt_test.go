package planner

import (
	"bytes"
	"context"
	"encoding/base64"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/decrypt"
	_ "syncd.dev/syncd/internal/decrypt/sopsfile" // renders in process read SOPS files
	"syncd.dev/syncd/internal/decrypt/sopstest"
)

const sopsSecret = `apiVersion: v1
kind: Secret
metadata:
  name: db
stringData:
  password: secret-plaintext-1
`

const sopsConfigMap = `apiVersion: v1
kind: ConfigMap
metadata:
  name: settings
data:
  token: secret-plaintext-2
  mode: visible
`

// writeFiles writes name → content below dir.
func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for name, data := range files {
		p := filepath.Join(dir, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(p, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

func TestRenderDecrypts(t *testing.T) {
	id := sopstest.NewIdentity(t)
	keys, err := decrypt.ParseKeys(id.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	enc := func(plain, format, regex string) []byte {
		return sopstest.Encrypt(t, []byte(plain), sopstest.Options{Format: format, Age: []string{id.Recipient}, EncryptedRegex: regex})
	}
	tests := map[string]struct {
		files map[string][]byte
		// want: kind/name → field → value after the render
		want          map[string]string
		wantDecrypted []string
	}{
		"plain directory, YAML and JSON": {
			files: map[string][]byte{
				"secret.yaml": enc(sopsSecret, "yaml", "^(data|stringData)$"),
				"cm.json":     enc(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings"},"data":{"token":"secret-plaintext-2","mode":"visible"}}`, "json", "^token$"),
			},
			want:          map[string]string{"Secret/db .stringData.password": "secret-plaintext-1", "ConfigMap/settings .data.token": "secret-plaintext-2", "ConfigMap/settings .data.mode": "visible"},
			wantDecrypted: []string{"ConfigMap .data.token", "Secret .stringData.password"},
		},
		"kustomize: an encrypted resource, transformed": {
			files: map[string][]byte{
				"kustomization.yaml": []byte("namespace: team\nnamePrefix: p-\ncommonLabels: {app: x}\nresources: [secret.yaml, cm.yaml]\n"),
				"secret.yaml":        enc(sopsSecret, "yaml", "^(data|stringData)$"),
				"cm.yaml":            enc(sopsConfigMap, "yaml", "^token$"),
			},
			want:          map[string]string{"Secret/p-db .stringData.password": "secret-plaintext-1", "ConfigMap/p-settings .data.token": "secret-plaintext-2"},
			wantDecrypted: []string{"ConfigMap .data.token", "Secret .stringData.password"},
		},
		"kustomize: generators read encrypted .env and files": {
			files: map[string][]byte{
				"kustomization.yaml": []byte("generatorOptions: {disableNameSuffixHash: true}\n" +
					"secretGenerator: [{name: env, envs: [secret.env]}]\n" +
					"configMapGenerator: [{name: cfg, envs: [plain.env, cm.env]}]\n"),
				"secret.env": enc("PASS=secret-plaintext-3\n", "dotenv", ""),
				"cm.env":     enc("TOKEN=secret-plaintext-4\n", "dotenv", ""),
				"plain.env":  []byte("LEVEL=debug\n"),
			},
			want: map[string]string{
				"Secret/env .data.PASS":     base64.StdEncoding.EncodeToString([]byte("secret-plaintext-3")),
				"ConfigMap/cfg .data.TOKEN": "secret-plaintext-4",
				"ConfigMap/cfg .data.LEVEL": "debug",
			},
			wantDecrypted: []string{"ConfigMap .data.TOKEN"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			ms, err := Render(context.Background(), Tree{Dir: dir, Decryption: keys})
			if err != nil {
				t.Fatal(err)
			}
			for where, want := range tc.want {
				obj, field, _ := strings.Cut(where, " ")
				kind, name, _ := strings.Cut(obj, "/")
				if got := fieldOf(ms, kind, name, strings.Split(strings.TrimPrefix(field, "."), ".")...); got != want {
					t.Errorf("%s = %q, want %q", where, got, want)
				}
			}
			pl, err := New(App{Name: "a", Namespace: "default", Manager: "syncd-a"}, Options{})
			if err != nil {
				t.Fatal(err)
			}
			plan, err := pl.Plan(context.Background(), ms)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, f := range plan.Decrypted {
				got = append(got, f.Kind.Kind+" "+f.Path.String())
			}
			if diff := cmp.Diff(tc.wantDecrypted, got); diff != "" {
				t.Errorf("Decrypted (-want +got):\n%s", diff)
			}
			var out bytes.Buffer
			if err := plan.WriteYAML(&out); err != nil {
				t.Fatal(err)
			}
			if strings.Contains(out.String(), "secret-plaintext") || strings.Contains(out.String(), base64.StdEncoding.EncodeToString([]byte("secret-plaintext-3"))) {
				t.Errorf("the render prints a decrypted value:\n%s", out.String())
			}
			if !strings.Contains(out.String(), "<redacted>") {
				t.Errorf("the render hides nothing:\n%s", out.String())
			}
		})
	}
}

func TestRenderRefusesUndecryptable(t *testing.T) {
	id, other := sopstest.NewIdentity(t), sopstest.NewIdentity(t)
	keys, err := decrypt.ParseKeys(other.KeysFile)
	if err != nil {
		t.Fatal(err)
	}
	secret := sopstest.Encrypt(t, []byte(sopsSecret), sopstest.Options{Age: []string{id.Recipient}, EncryptedRegex: "^stringData$"})
	env := sopstest.Encrypt(t, []byte("PASS=secret-plaintext\n"), sopstest.Options{Format: "dotenv", Age: []string{id.Recipient}})
	tests := map[string]struct {
		files   map[string][]byte
		keys    *decrypt.Keys
		wantErr []string
	}{
		"plain directory, another key": {
			files:   map[string][]byte{"ok.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ok}\n"), "s/secret.yaml": secret},
			keys:    keys,
			wantErr: []string{"s/secret.yaml: cannot be decrypted with SOPS: no key in the app's keysFile decrypts it: it is encrypted for age " + id.Recipient},
		},
		"plain directory, no keys": {
			files:   map[string][]byte{"secret.yaml": secret},
			wantErr: []string{"secret.yaml: is encrypted with SOPS, and the app has no decryption keys"},
		},
		"kustomize resource, another key": {
			files:   map[string][]byte{"kustomization.yaml": []byte("resources: [secret.yaml]\n"), "secret.yaml": secret},
			keys:    keys,
			wantErr: []string{"secret.yaml", "no key in the app's keysFile decrypts it"},
		},
		"kustomize env file, another key": {
			files:   map[string][]byte{"kustomization.yaml": []byte("secretGenerator: [{name: s, envs: [s.env]}]\n"), "s.env": env},
			keys:    keys,
			wantErr: []string{"s.env", "no key in the app's keysFile decrypts it"},
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			writeFiles(t, dir, tc.files)
			ms, err := Render(context.Background(), Tree{Dir: dir, Decryption: tc.keys})
			if err == nil {
				t.Fatalf("rendered %d manifests, want an error", len(ms))
			}
			for _, w := range tc.wantErr {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error does not say %q:\n%v", w, err)
				}
			}
			if strings.Contains(err.Error(), "secret-plaintext") {
				t.Errorf("error quotes a value: %v", err)
			}
		})
	}
}
