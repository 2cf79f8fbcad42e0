package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/decrypt/sopstest"
)

// sopsConfig writes the age identity's keys file outside the app's
// directory and a syncd.yaml whose app web decrypts with it.
func sopsConfig(t *testing.T, ns string, id sopstest.Identity) string {
	t.Helper()
	keys := filepath.Join(t.TempDir(), "age.agekey")
	if err := os.WriteFile(keys, id.KeysFile, 0o600); err != nil {
		t.Fatal(err)
	}
	return writeConfig(t, fmt.Sprintf("- name: web\n  source: repo\n  namespace: %s\n  decryption:\n    provider: sops\n    keysFile: %s\n", ns, keys))
}

// encryptFor encrypts a fixture for id as `sops --encrypt` would, with
// Flux's recommended encrypted_regex for YAML.
func encryptFor(t *testing.T, id sopstest.Identity, format, plain string) string {
	t.Helper()
	regex := ""
	if format == "yaml" {
		regex = "^(data|stringData|token)$"
	}
	return string(sopstest.Encrypt(t, []byte(plain), sopstest.Options{Format: format, Age: []string{id.Recipient}, EncryptedRegex: regex}))
}

// render runs `syncd render`, which talks to no cluster.
func render(t *testing.T, args ...string) result {
	t.Helper()
	code, out, errOut := runCmd(t, append([]string{"render"}, args...)...)
	return result{code: code, stdout: out, stderr: errOut}
}

// noPlaintext fails when any output of r shows one of the values.
func noPlaintext(t *testing.T, what string, r result, values ...string) {
	t.Helper()
	for _, v := range values {
		if strings.Contains(r.stdout, v) || strings.Contains(r.stderr, v) {
			t.Errorf("%s prints the decrypted value %q:\n%s%s", what, v, r.stdout, r.stderr)
		}
	}
}

func sopsSecretYAML(ns, password string) string {
	return fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: %s\nstringData:\n  password: %s\n", ns, password)
}

// TestSOPSApplyConfig applies a SOPS-encrypted Secret and a ConfigMap with
// an encrypted value through `syncd apply --config`, and checks that
// render, plan (of a changed value) and drift never print a decrypted
// value.
func TestSOPSApplyConfig(t *testing.T) {
	ns := env.Namespace(t)
	id := sopstest.NewIdentity(t)
	cfg := sopsConfig(t, ns, id)
	const pass, token = "pass-plain-8d2f", "token-plain-51ac"
	dir := writeFiles(t, map[string]string{
		"secret.yaml": encryptFor(t, id, "yaml", sopsSecretYAML(ns, pass)),
		"cm.json":     encryptFor(t, id, "json", fmt.Sprintf(`{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"settings","namespace":%q},"data":{"token":%q,"mode":"visible"}}`, ns, token)),
	})
	for _, f := range []string{"secret.yaml", "cm.json"} {
		data, _ := os.ReadFile(filepath.Join(dir, f))
		if strings.Contains(string(data), "plain-") {
			t.Fatalf("%s is not encrypted:\n%s", f, data)
		}
	}

	r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", dir)
	if r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noPlaintext(t, "apply", r, pass, token)
	ctx := context.Background()
	sec, err := env.Clientset(t).CoreV1().Secrets(ns).Get(ctx, "db", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := string(sec.Data["password"]); got != pass {
		t.Errorf("Secret db .data.password = %q, want the decrypted value", got)
	}
	if _, found := sec.Annotations["sops"]; found || strings.Contains(fmt.Sprint(sec.Annotations), "ENC[") {
		t.Errorf("SOPS metadata reached the cluster: %v", sec.Annotations)
	}
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["token"] != token || cm.Data["mode"] != "visible" {
		t.Errorf("ConfigMap settings .data = %v, want the decrypted token", cm.Data)
	}

	for _, format := range []string{"yaml", "json"} {
		r = render(t, "--config", cfg, "--app", "web", "--path", dir, "-o", format)
		if r.code != exitOK || !strings.Contains(r.stdout, "<redacted>") {
			t.Fatalf("render -o %s: code %d, want the values redacted\n%s%s", format, r.code, r.stdout, r.stderr)
		}
		noPlaintext(t, "render -o "+format, r, pass, token)
	}

	// A new password: the plan says the Secret changes, without values.
	const newPass = "pass-plain-new-77e1"
	if err := os.WriteFile(filepath.Join(dir, "secret.yaml"), []byte(encryptFor(t, id, "yaml", sopsSecretYAML(ns, newPass))), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json", "markdown"} {
		r = syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", format)
		if r.code != exitChanges || !strings.Contains(r.stdout, "db") || !strings.Contains(r.stdout, "redacted, changed") {
			t.Fatalf("plan -o %s: code %d, want the Secret shown as changed\n%s%s", format, r.code, r.stdout, r.stderr)
		}
		noPlaintext(t, "plan -o "+format, r, pass, newPass, token)
	}

	// Another writer changes the decrypted ConfigMap value: drift reports
	// the field, never its values.
	const operator = "operator-plain-0c3b"
	_, err = env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(ctx, "settings", types.MergePatchType,
		[]byte(`{"data":{"token":"`+operator+`"}}`), metav1.PatchOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	for _, format := range []string{"text", "json", "markdown"} {
		r = syncd(t, "drift", "--config", cfg, "--app", "web", "--path", dir, "-o", format)
		if r.code != exitChanges || !strings.Contains(r.stdout, "token") {
			t.Fatalf("drift -o %s: code %d, want .data.token reported\n%s%s", format, r.code, r.stdout, r.stderr)
		}
		noPlaintext(t, "drift -o "+format, r, newPass, token, operator)
	}
}

// TestSOPSKustomize applies a kustomization whose Secret manifest is
// SOPS-encrypted and whose secretGenerator and configMapGenerator read
// SOPS-encrypted .env files, through kustomize transformers.
func TestSOPSKustomize(t *testing.T) {
	ns := env.Namespace(t)
	id := sopstest.NewIdentity(t)
	cfg := sopsConfig(t, ns, id)
	const pass, envPass, envToken = "kpass-plain-19fe", "envpass-plain-a0b1", "envtoken-plain-c2d3"
	dir := writeFiles(t, map[string]string{
		"kustomization.yaml": "namespace: " + ns + "\nnamePrefix: k-\ncommonLabels: {tier: db}\nresources: [secret.yaml]\n" +
			"generatorOptions: {disableNameSuffixHash: true}\n" +
			"secretGenerator: [{name: env, envs: [secret.env]}]\n" +
			"configMapGenerator: [{name: env, envs: [plain.env, cm.env]}]\n",
		"secret.yaml": encryptFor(t, id, "yaml", sopsSecretYAML(ns, pass)),
		"secret.env":  encryptFor(t, id, "dotenv", "PASS="+envPass+"\n"),
		"cm.env":      encryptFor(t, id, "dotenv", "TOKEN="+envToken+"\n"),
		"plain.env":   "LEVEL=debug\n",
	})
	r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", dir)
	if r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noPlaintext(t, "apply", r, pass, envPass, envToken)
	ctx := context.Background()
	for name, want := range map[string]map[string]string{"k-db": {"password": pass}, "k-env": {"PASS": envPass}} {
		sec, err := env.Clientset(t).CoreV1().Secrets(ns).Get(ctx, name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		for k, v := range want {
			if string(sec.Data[k]) != v || sec.Labels["tier"] != "db" {
				t.Errorf("Secret %s: .data.%s = %q, labels %v; want the decrypted value, labelled", name, k, sec.Data[k], sec.Labels)
			}
		}
	}
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "k-env", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["TOKEN"] != envToken || cm.Data["LEVEL"] != "debug" {
		t.Errorf("ConfigMap k-env .data = %v, want the decrypted TOKEN and LEVEL", cm.Data)
	}
	r = render(t, "--config", cfg, "--app", "web", "--path", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "LEVEL: debug") {
		t.Fatalf("render: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	noPlaintext(t, "render", r, pass, envPass, envToken)
	r = syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", "json")
	noPlaintext(t, "plan", r, pass, envPass, envToken)
}

// TestSOPSOtherKey: a document encrypted for a key syncd does not hold
// fails the app with the file named, and nothing of the app is applied.
func TestSOPSOtherKey(t *testing.T) {
	ns := env.Namespace(t)
	cfg := sopsConfig(t, ns, sopstest.NewIdentity(t))
	other := sopstest.NewIdentity(t)
	const pass = "other-plain-3e4f"
	for name, files := range map[string]map[string]string{
		"plain directory": {
			"a-cm.yaml":     configMapYAML(ns, map[string]string{"color": "blue"}),
			"z/secret.yaml": encryptFor(t, other, "yaml", sopsSecretYAML(ns, pass)),
		},
		"kustomize env file": {
			"kustomization.yaml": "resources: [a-cm.yaml]\nsecretGenerator: [{name: s, namespace: " + ns + ", envs: [z/secret.env]}]\n",
			"a-cm.yaml":          configMapYAML(ns, map[string]string{"color": "blue"}),
			"z/secret.env":       encryptFor(t, other, "dotenv", "PASS="+pass+"\n"),
		},
	} {
		t.Run(name, func(t *testing.T) {
			file := "z/secret.yaml"
			if _, ok := files[file]; !ok {
				file = "z/secret.env"
			}
			r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", writeFiles(t, files))
			if r.code != exitError || !strings.Contains(r.stderr, file) || !strings.Contains(r.stderr, "no key in the app's keysFile decrypts it") || !strings.Contains(r.stderr, other.Recipient) {
				t.Fatalf("apply: code %d, want %d and %s named with its recipient\n%s%s", r.code, exitError, file, r.stdout, r.stderr)
			}
			noPlaintext(t, "apply", r, pass)
			if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "seed", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
				t.Errorf("an app whose render failed applied its other objects (get seed: %v)", err)
			}
		})
	}
}
