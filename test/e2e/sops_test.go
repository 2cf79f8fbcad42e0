package e2e

import (
	"encoding/base64"
	"fmt"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/decrypt/sopstest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// paymentsRepo is a kustomize directory in the shape of a Flux repository
// with SOPS: the Secret is committed encrypted (db-credentials.enc.yaml,
// only data and stringData encrypted, as Flux's guide's .sops.yaml
// says) beside plain manifests that use it.
func paymentsRepo(t *testing.T, id sopstest.Identity, password string) map[string][]byte {
	t.Helper()
	secret := fmt.Sprintf(`apiVersion: v1
kind: Secret
metadata:
  name: payments-db
  namespace: payments
type: Opaque
stringData:
  username: payments
  password: %s
`, password)
	return map[string][]byte{
		"apps/payments/kustomization.yaml": []byte(`apiVersion: kustomize.config.k8s.io/v1beta1
kind: Kustomization
namespace: payments
resources: [namespace.yaml, deployment.yaml, db-credentials.enc.yaml]
`),
		"apps/payments/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: payments}\n"),
		"apps/payments/deployment.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: payments}
spec:
  replicas: 1
  selector: {matchLabels: {app: payments}}
  template:
    metadata: {labels: {app: payments}}
    spec:
      containers:
        - name: payments
          image: ghcr.io/example/payments:3.2.0
          env:
            - name: DB_PASSWORD
              valueFrom: {secretKeyRef: {name: payments-db, key: password}}
`),
		"apps/payments/db-credentials.enc.yaml": sopstest.Encrypt(t, []byte(secret), sopstest.Options{
			Age: []string{id.Recipient}, EncryptedRegex: "^(data|stringData)$",
		}),
	}
}

// ageSecretKey is the private key line of an age keys file.
func ageSecretKey(t *testing.T, keysFile []byte) string {
	t.Helper()
	for _, line := range strings.Split(string(keysFile), "\n") {
		if strings.HasPrefix(line, "AGE-SECRET-KEY-") {
			return line
		}
	}
	t.Fatalf("no AGE-SECRET-KEY line in the keys file")
	return ""
}

// TestJourneySOPS: a Git repository over HTTP holds a SOPS-encrypted
// Secret (age); syncd decrypts it with the keys file of the app's
// decryption section. Render and plan show its values redacted, apply
// writes the plaintext to the cluster only, and a new encrypted value
// committed is planned and applied.
func TestJourneySOPS(t *testing.T) {
	w := newWorkspace(t)
	const password, rotated = "s3cr3t-Pw-e2e-4Kq9xV", "r0tated-Pw-e2e-Lm72Zc"
	id := sopstest.NewIdentity(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "payments")
	if _, err := repo.Commit("payments with its database credentials", paymentsRepo(t, id, password)); err != nil {
		t.Fatal(err)
	}
	keys := w.file("sops/age.agekey", string(id.KeysFile))
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: payments
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: payments
    source: payments
    path: apps/payments
    namespace: payments
    decryption:
      provider: sops
      keysFile: %s
`, repo.URL, keys))

	cl := newCluster(t)
	db := objectRef{kind: "Secret", namespace: "payments", name: "payments-db"}
	j := &journey{
		w: w, app: "payments",
		render:   []string{"--path", repo.Work + "/apps/payments"},
		rendered: []string{"name: payments-db", "<redacted>", "ghcr.io/example/payments:3.2.0"},
		planned:  []string{"Secret payments/payments-db", "redacted, changed"},
		secrets:  []string{password, rotated, ageSecretKey(t, id.KeysFile)},
		change: func() func(*testing.T) {
			if _, err := repo.Commit("rotate the database password", paymentsRepo(t, id, rotated)); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) { checkSecretValue(t, cl, db, "password", rotated) }
		},
	}
	j.run(t)
	checkSecretValue(t, cl, db, "username", "payments")
}

// checkSecretValue fails unless the live Secret's data[key] is want; it
// never prints the live value.
func checkSecretValue(t *testing.T, cl *cluster, ref objectRef, key, want string) {
	t.Helper()
	s, err := cl.get(ref)
	if err != nil {
		t.Fatal(err)
	}
	got, _, _ := unstructured.NestedString(s.Object, "data", key)
	if got != base64.StdEncoding.EncodeToString([]byte(want)) {
		t.Errorf("%s .data.%s is not the value committed (encrypted) in Git", ref, key)
	}
}
