package e2e

import (
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"syncd.dev/syncd/internal/decrypt/sopstest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// embeddedRepo is a kustomization whose ConfigMap's database URL takes
// the password of a SOPS-encrypted Secret between two bars (a
// replacement with a delimiter), as a JDBC URL built from a Secret is.
func embeddedRepo(t *testing.T, id sopstest.Identity, password string) map[string][]byte {
	t.Helper()
	secret := "apiVersion: v1\nkind: Secret\nmetadata: {name: ledger-db, namespace: ledger}\nstringData:\n  password: " + password + "\n"
	return map[string][]byte{
		"apps/ledger/kustomization.yaml": []byte(`resources: [namespace.yaml, db.enc.yaml, settings.yaml]
replacements:
  - source: {kind: Secret, name: ledger-db, fieldPath: stringData.password}
    targets:
      - select: {kind: ConfigMap, name: ledger-settings}
        fieldPaths: [data.url]
        options: {delimiter: '|', index: 1}
`),
		"apps/ledger/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: ledger}\n"),
		"apps/ledger/settings.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: ledger-settings, namespace: ledger}\ndata:\n  url: jdbc://db|PASSWORD|eu\n"),
		"apps/ledger/db.enc.yaml": sopstest.Encrypt(t, []byte(secret), sopstest.Options{
			Age: []string{id.Recipient}, EncryptedRegex: "^stringData$",
		}),
	}
}

// TestJourneySOPSValueEmbeddedInAString: a SOPS-decrypted password that
// kustomize embeds in a longer string (a ConfigMap's JDBC URL) is applied
// whole to the cluster, and render, apply, and the Markdown plan of its
// rotation (the pull-request comment) print the URL with the password
// masked, never the password or a fragment of it.
func TestJourneySOPSValueEmbeddedInAString(t *testing.T) {
	w := newWorkspace(t)
	const password, rotated = "Jd8-embedded-Pw-4Kq9xV", "Rt3-embedded-Pw-Lm72Zc"
	id := sopstest.NewIdentity(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "ledger")
	if _, err := repo.Commit("ledger", embeddedRepo(t, id, password)); err != nil {
		t.Fatal(err)
	}
	keys := w.file("sops/age.agekey", string(id.KeysFile))
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: ledger
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: ledger
    source: ledger
    path: apps/ledger
    namespace: ledger
    decryption: {provider: sops, keysFile: %s}
`, repo.URL, keys))
	app := []string{"--config", w.config, "--app", "ledger", "--cache-dir", w.cache}

	r := w.must(exitOK, append(append([]string{"render"}, app...), "--path", repo.Work+"/apps/ledger")...)
	if !strings.Contains(r.stdout, "url: jdbc://db|<redacted>|eu") {
		t.Errorf("render does not print the URL with the password masked\n%s", r)
	}
	w.must(exitOK, append([]string{"apply"}, app...)...)
	cl := newCluster(t)
	checkURL(t, cl, password)

	if _, err := repo.Commit("rotate the ledger password", embeddedRepo(t, id, rotated)); err != nil {
		t.Fatal(err)
	}
	r = w.must(exitChanges, append([]string{"plan", "-o", "markdown"}, app...)...)
	for _, want := range []string{"ConfigMap ledger/ledger-settings", "url: jdbc://db|<redacted>|eu", "url: jdbc://db|<redacted, changed>|eu"} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("plan -o markdown does not print %q\n%s", want, r)
		}
	}
	w.must(exitOK, append([]string{"apply"}, app...)...)
	checkURL(t, cl, rotated)
	w.checkNoSecrets(password, rotated)
}

// checkURL fails unless the live ConfigMap's URL holds password whole;
// it never prints the live value.
func checkURL(t *testing.T, cl *cluster, password string) {
	t.Helper()
	cm, err := cl.get(objectRef{kind: "ConfigMap", namespace: "ledger", name: "ledger-settings"})
	if err != nil {
		t.Fatal(err)
	}
	if got, _, _ := unstructured.NestedString(cm.Object, "data", "url"); got != "jdbc://db|"+password+"|eu" {
		t.Errorf("ConfigMap ledger/ledger-settings .data.url is not the URL with the committed (encrypted) password")
	}
}

// TestJourneyHelmRequiredMessageHidden: a chart's required message quotes
// an inline helm.values token in its own words; syncd run fails the app,
// and neither /status (read without authentication), the log nor the
// command errors print the token: the message keeps its words around
// <redacted>.
func TestJourneyHelmRequiredMessageHidden(t *testing.T) {
	const token = "hv-inline-Tok3n-8sQ2"
	w := newWorkspace(t)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "vault-client")
	if _, err := repo.Commit("vault-client chart", map[string][]byte{
		"charts/vault-client/Chart.yaml":        []byte("apiVersion: v2\nname: vault-client\nversion: 0.1.0\n"),
		"charts/vault-client/templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: vault-client}\ndata:\n  user: {{ required (printf \"token %s needs .Values.user\" .Values.token) .Values.user }}\n"),
	}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: vault-client
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: vault-client
    source: vault-client
    path: charts/vault-client
    namespace: default
    helm:
      releaseName: vault-client
      values: {token: %s}
`, repo.URL, token))

	r := w.must(exitError, "render", "--config", w.config, "--app", "vault-client", "--cache-dir", w.cache, "--path", repo.Work+"/charts/vault-client")
	if !strings.Contains(r.stderr, "token <redacted> needs .Values.user") {
		t.Errorf("render does not say what the chart requires, with the token masked\n%s", r)
	}
	d := w.startDaemon()
	var failed appStatus
	waitFor(t, "vault-client to fail in /status", 2*time.Minute, func() (bool, string) {
		apps, err := d.status()
		if err != nil {
			return false, err.Error()
		}
		for _, a := range apps {
			if a.App == "vault-client" && a.Error != "" {
				failed = a
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v\n%s", apps, tail(d.logText(), 2000))
	})
	if !strings.Contains(failed.Error, "token <redacted> needs .Values.user") {
		t.Errorf("/status error = %q, want the required message with the token masked", failed.Error)
	}
	d.stop()
	if !strings.Contains(d.logText(), "token <redacted> needs .Values.user") {
		t.Errorf("the log does not carry the masked required message:\n%s", tail(d.logText(), 3000))
	}
	w.checkNoSecrets(token)
}
