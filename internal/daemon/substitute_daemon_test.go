package daemon_test

import (
	"context"
	"fmt"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/daemon"
	"syncd.dev/syncd/internal/reconcile"
	"syncd.dev/syncd/internal/reconcile/reconciletest"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestDaemonSubstitutesFromConfigMapAndSecret: the daemon renders a
// kustomization from a real Git server whose objects use variables from a
// ConfigMap and a Secret in syncd's namespace (reconcile.Options.Namespace)
// and a file beside the config; the applied objects hold the values, and
// the Secret's value is in no log line and no status.
func TestDaemonSubstitutesFromConfigMapAndSecret(t *testing.T) {
	const password = "daemon-hunter2"
	ns, sys := env.Namespace(t), env.Namespace(t)
	cs := env.Clientset(t)
	ctx := context.Background()
	if _, err := cs.CoreV1().ConfigMaps(sys).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "cluster-vars"}, Data: map[string]string{"COLOR": "green", "REPLICAS": "1"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(sys).Create(ctx, &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "cluster-secrets"}, Data: map[string][]byte{"PASSWORD": []byte(password)}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "platform")
	files := map[string][]byte{
		"app/kustomization.yaml": []byte("resources: [settings.yaml, creds.yaml, web.yaml]\n"),
		"app/settings.yaml":      []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  color: ${COLOR}\n  region: ${REGION}\n  replicas: ${QUOTE}${REPLICAS}${QUOTE}\n"),
		"app/creds.yaml":         []byte("apiVersion: v1\nkind: Secret\nmetadata:\n  name: creds\nstringData:\n  password: ${PASSWORD}\n"),
		"app/web.yaml":           []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec:\n  replicas: ${REPLICAS}\n  selector: {matchLabels: {app: web}}\n  template:\n    metadata: {labels: {app: web}}\n    spec:\n      containers: [{name: app, image: \"example.com/web:1\"}]\n"),
	}
	if _, err := repo.Commit("variables", files); err != nil {
		t.Fatal(err)
	}
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "region.yaml"), []byte("REGION: eu-west-1\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	cfgPath := filepath.Join(dir, "syncd.yaml")
	cfg := fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
- name: repo
  git: {url: %s, branch: main, interval: 1h}
apps:
- name: web
  source: repo
  path: app
  namespace: %s
  substitute:
    QUOTE: '"'
  substituteFrom:
  - file: region.yaml
  - kind: ConfigMap
    name: cluster-vars
  - kind: Secret
    name: cluster-secrets
`, repo.URL, ns)
	if err := os.WriteFile(cfgPath, []byte(cfg), 0o644); err != nil {
		t.Fatal(err)
	}
	logs := &syncBuffer{}
	d := launchDaemon(t, daemon.Options{
		ConfigPath:  cfgPath,
		Cluster:     cluster(t),
		Options:     reconcile.Options{CacheDir: t.TempDir(), Namespace: sys},
		ConfigCheck: 200 * time.Millisecond,
		Logger:      slog.New(slog.NewTextHandler(logs, &slog.HandlerOptions{Level: slog.LevelDebug})),
	})
	reconciletest.Eventually(t, "web synced with its variables", func() (bool, string) {
		st := appStatus(d, "web")
		cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
		if err != nil {
			return false, fmt.Sprintf("settings: %v; status %+v", err, st)
		}
		return st.Result == "ok", fmt.Sprintf("settings data %v; status %+v", cm.Data, st)
	})
	cm, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "settings", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if want := fmt.Sprint(map[string]string{"color": "green", "region": "eu-west-1", "replicas": "1"}); fmt.Sprint(cm.Data) != want {
		t.Errorf("settings data = %v, want %s", cm.Data, want)
	}
	dep, err := cs.AppsV1().Deployments(ns).Get(ctx, "web", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if dep.Spec.Replicas == nil || *dep.Spec.Replicas != 1 {
		t.Errorf("Deployment replicas = %v, want 1 (an unquoted variable through kustomize is a number)", dep.Spec.Replicas)
	}
	sec, err := cs.CoreV1().Secrets(ns).Get(ctx, "creds", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if string(sec.Data["password"]) != password {
		t.Error("Secret creds does not hold the Secret variable's value")
	}
	if strings.Contains(logs.String(), password) {
		t.Errorf("the daemon logged the Secret's value")
	}
	for _, s := range d.Status() {
		if strings.Contains(fmt.Sprintf("%+v", s), password) {
			t.Errorf("status holds the Secret's value: %+v", s)
		}
	}
}
