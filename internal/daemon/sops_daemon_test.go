package daemon_test

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/alert"
	"syncd.dev/syncd/internal/decrypt/sopstest"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
)

// sopsSecret is a Secret db in ns with stringData.password, encrypted for
// id as `sops --encrypt` writes it with Flux's recommended regex.
func sopsSecret(t *testing.T, id sopstest.Identity, ns, password string) string {
	t.Helper()
	plain := fmt.Sprintf("apiVersion: v1\nkind: Secret\nmetadata:\n  name: db\n  namespace: %s\nstringData:\n  password: %s\n", ns, password)
	return string(sopstest.Encrypt(t, []byte(plain), sopstest.Options{Format: "yaml", Age: []string{id.Recipient}, EncryptedRegex: "^(data|stringData)$"}))
}

// TestDaemonSOPS: in `syncd run`, a SOPS-encrypted Secret is decrypted
// with the app's keysFile and applied; another writer's change to it is
// alerted as drift and reverted; a commit encrypted for another key fails
// the app naming the file and the recipient, applies nothing and leaves
// the Secret as it was. No decrypted value, Git's or the other writer's,
// is in the logs, /status or an alert.
func TestDaemonSOPS(t *testing.T) {
	const gitPass, liveChange, otherPass = "daemon-sops-p4ss", "operator-s3cret", "other-key-p4ss"
	ns := env.Namespace(t)
	id := sopstest.NewIdentity(t)
	keys := filepath.Join(t.TempDir(), "age.agekey")
	if err := os.WriteFile(keys, id.KeysFile, 0o600); err != nil {
		t.Fatal(err)
	}
	repo := reconciletest.NewRepo(t)
	repo.Commit("first", map[string]string{"app/secret.yaml": sopsSecret(t, id, ns, gitPass)})
	h := startHook(t)
	cfgPath := filepath.Join(t.TempDir(), "syncd.yaml")
	writeConfig(t, cfgPath, repo.Dir, ns, "1s")
	appendFile(t, cfgPath, "  decryption:\n    provider: sops\n    keysFile: "+keys+"\n"+h.config())
	d, logs := runLoggedDaemon(t, cfgPath, cluster(t), reconcile.Options{}, nil)
	reconciletest.Eventually(t, "the encrypted Secret applied", func() (bool, string) { return converged(appStatus(d, "web"), repo.Head()) })

	ctx := context.Background()
	secrets := env.Clientset(t).CoreV1().Secrets(ns)
	password := func() string {
		s, err := secrets.Get(ctx, "db", metav1.GetOptions{})
		if err != nil {
			return err.Error()
		}
		return string(s.Data["password"])
	}
	if got := password(); got != gitPass {
		t.Fatalf("the Secret's password is not Git's decrypted value (len %d)", len(got))
	}

	if _, err := secrets.Patch(ctx, "db", types.MergePatchType, []byte(`{"stringData":{"password":"`+liveChange+`"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the change alerted and reverted", func() (bool, string) {
		_, alerted := h.find(0, func(p alert.WebhookPayload) bool { return p.Object.Name == "db" })
		return alerted && password() == gitPass, fmt.Sprintf("alerted %v, reverted %v", alerted, password() == gitPass)
	})

	repo.Commit("other key", map[string]string{"app/secret.yaml": sopsSecret(t, sopstest.NewIdentity(t), ns, otherPass)})
	if err := d.Trigger("repo"); err != nil {
		t.Fatal(err)
	}
	reconciletest.Eventually(t, "the commit for another key failed", func() (bool, string) {
		st := appStatus(d, "web")
		return st.Result == reconcile.ResultFailed && strings.Contains(st.Error, "secret.yaml") && strings.Contains(st.Error, "no key in the app's keysFile decrypts it"), fmt.Sprintf("%+v", st)
	})
	if got := password(); got != gitPass {
		t.Errorf("a commit that does not decrypt changed the Secret (len %d)", len(got))
	}

	status, err := json.Marshal(d.Status())
	if err != nil {
		t.Fatal(err)
	}
	alerts, err := json.Marshal(h.alerts())
	if err != nil {
		t.Fatal(err)
	}
	for what, out := range map[string]string{"logs": logs.String(), "/status": string(status), "alerts": string(alerts)} {
		for _, v := range []string{gitPass, liveChange, otherPass} {
			if strings.Contains(out, v) {
				t.Errorf("%s show the decrypted value %q", what, v)
			}
		}
	}
}
