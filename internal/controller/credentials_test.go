package controller

import (
	"context"
	"os"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// secretData is a SecretReader of fixed Secrets, by name.
type secretData map[string]map[string][]byte

func (s secretData) SecretData(_ context.Context, _, name string) (map[string][]byte, error) {
	return s[name], nil
}

// TestWriteArtifactCredentials: a HelmSource's or an OCISource's Secret
// keys are written to private files the config's auth names; username
// is a value; a Secret with none of the keys is refused without its
// values.
func TestWriteArtifactCredentials(t *testing.T) {
	full := map[string][]byte{
		v1alpha1.SecretKeyUsername: []byte("robot"), v1alpha1.SecretKeyPassword: []byte("s3cret"),
		v1alpha1.SecretKeyCA: []byte("PEM"), v1alpha1.SecretKeyDockerConfig: []byte(`{"auths":{}}`),
	}
	tests := map[string]struct {
		src     Source
		secret  map[string][]byte
		want    map[string]string // Credentials field -> file content
		wantErr string
	}{
		"HelmSource": {
			src: testHelmSource(nil), secret: full,
			want: map[string]string{"Username": "robot", "PasswordFile": "s3cret", "CAFile": "PEM", "DockerConfigFile": `{"auths":{}}`},
		},
		"OCISource token": {
			src: testOCISource(nil), secret: map[string][]byte{v1alpha1.SecretKeyToken: []byte("t0ken")},
			want: map[string]string{"TokenFile": "t0ken"},
		},
		"no known key": {
			src: testOCISource(nil), secret: map[string][]byte{"passwd": []byte("s3cret")},
			wantErr: "OCISource team-a/bundle: Secret auth has none of the keys the source reads",
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			w := credentialWriter{secrets: secretData{"auth": tc.secret}, dir: t.TempDir()}
			creds, err := w.write(context.Background(), tc.src)
			if tc.wantErr != "" {
				if err == nil || !strings.Contains(err.Error(), tc.wantErr) || strings.Contains(err.Error(), "s3cret") {
					t.Fatalf("write = %v; want an error containing %q, without the values", err, tc.wantErr)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			got := map[string]string{}
			for field, path := range map[string]string{"PasswordFile": creds.PasswordFile, "TokenFile": creds.TokenFile, "CAFile": creds.CAFile, "DockerConfigFile": creds.DockerConfigFile} {
				if path == "" {
					continue
				}
				data, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				if fi, _ := os.Stat(path); fi.Mode().Perm() != 0o600 {
					t.Errorf("%s mode %v, want 0600", path, fi.Mode().Perm())
				}
				got[field] = string(data)
			}
			if creds.Username != "" {
				got["Username"] = creds.Username
			}
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("credentials (-want +got):\n%s", diff)
			}
		})
	}
}
