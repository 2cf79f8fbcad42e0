package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyRefusedFirstSync: the built binary's first sync of an app
// whose objects do not exist yet (each validated by a dry-run create)
// writes nothing of the stage when the API server refuses one of them:
// the output names the refused objects and the server's reasons, never
// the values, and the good object is not created. Once Git fixes them,
// the next apply creates everything.
func TestJourneyRefusedFirstSync(t *testing.T) {
	const secretValue = "hunter2!!not-base64"
	w := newWorkspace(t)
	ns := "refused-first-sync"
	ensureNamespace(t, ns)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "refused")
	good := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: good}\ndata: {k: v}\n"
	if _, err := repo.Commit("refused", map[string][]byte{
		"app/good.yaml":   []byte(good),
		"app/label.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-label\n  labels: {tier: \"not a label value!\"}\ndata: {k: v}\n"),
		"app/secret.yaml": []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: token}\ndata: {token: \"" + secretValue + "\"}\n"),
	}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: refused
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: refused
    source: refused
    path: app
    namespace: %s
`, repo.URL, ns))
	r := w.must(1, "apply", "--config", w.config, "--cache-dir", w.cache)
	for _, want := range []string{
		"ConfigMap " + ns + "/bad-label failed", "metadata.labels: Invalid value",
		"Secret " + ns + "/token failed", "illegal base64 data",
		"nothing of stage namespaced or of later stages was applied",
		"ConfigMap " + ns + "/good skipped",
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("output lacks %q\n%s", want, r)
		}
	}
	cms := clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Get(context.Background(), "good", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("the good ConfigMap after a refused stage: get = %v, want not found", err)
	}

	if _, err := repo.Commit("fixed", map[string][]byte{
		"app/label.yaml":  []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: bad-label\n  labels: {tier: front}\ndata: {k: v}\n"),
		"app/secret.yaml": []byte("apiVersion: v1\nkind: Secret\nmetadata: {name: token}\nstringData: {token: fixed}\n"),
	}); err != nil {
		t.Fatal(err)
	}
	w.must(0, "apply", "--config", w.config, "--cache-dir", w.cache)
	for _, name := range []string{"good", "bad-label"} {
		if _, err := cms.Get(context.Background(), name, metav1.GetOptions{}); err != nil {
			t.Errorf("ConfigMap %s after the fix: %v", name, err)
		}
	}
	if _, err := clientset(t).CoreV1().Secrets(ns).Get(context.Background(), "token", metav1.GetOptions{}); err != nil {
		t.Errorf("Secret token after the fix: %v", err)
	}
	w.checkNoSecrets(secretValue, "not a label value!")
}
