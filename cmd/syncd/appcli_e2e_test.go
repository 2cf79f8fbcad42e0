package main

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/api/v1alpha1"
)

// TestAppCLIWithController: against `syncd run`'s App controller, not a
// stand-in: get apps shows the App Ready at the repository's revision,
// reconcile app --wait returns once the controller handled the request,
// suspend stops it handling requests and resume --wait brings it back;
// plan --app reads the GitSource's Secret into files and never prints
// its value.
func TestAppCLIWithController(t *testing.T) {
	ctx := context.Background()
	dyn := appDynamic(t)
	freshAppCRDs(t, dyn)
	repo := servedRepo(t, "cli")
	sha, err := repo.Commit("first", map[string][]byte{"web/cm.yaml": []byte(cmYAML("web", "  value: \"1\"\n"))})
	if err != nil {
		t.Fatal(err)
	}
	ns := env.Namespace(t)
	const token = "tok3n-never-printed"
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "repo-auth", Namespace: ns}, Data: map[string][]byte{v1alpha1.SecretKeyToken: []byte(token)}}
	if _, err := env.Clientset(t).CoreV1().Secrets(ns).Create(ctx, secret, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg := filepath.Join(t.TempDir(), "syncd.yaml")
	if err := os.WriteFile(cfg, []byte("apiVersion: syncd/v1alpha1\nkind: Config\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	startSyncd(t, "run", "--config", cfg, "--kubeconfig", env.Kubeconfig, "--inventory-namespace", invNamespace(t),
		"--leader-elect=false", "--cache-dir", t.TempDir(), "--listen", "127.0.0.1:0")
	apps := dyn.Resource(v1alpha1.AppResource).Namespace(ns)
	t.Cleanup(func() {
		_ = apps.Delete(context.Background(), "web", metav1.DeleteOptions{})
		poll(t, "App web gone (the controller removes its finalizer)", func() (bool, string) {
			l, err := apps.List(context.Background(), metav1.ListOptions{})
			return err == nil && len(l.Items) == 0, fmt.Sprint(err)
		})
	})
	createObjects(t, dyn, ns,
		fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"repo"},"spec":{"url":%q,"branch":"main","interval":"1h","secretRef":{"name":"repo-auth"}}}`, repo.URL),
		appJSON("web"))
	poll(t, "App web Ready at "+sha, func() (bool, string) {
		status, reason, rev := readyOf(t, apps, "web")
		return status == "True" && rev == sha, status + " " + reason + " " + rev
	})

	r := syncd(t, "get", "apps", "-n", ns)
	if rows := tableRows(r.stdout); len(rows) != 2 || rows[1][0] != "web" || rows[1][1] != "True" || rows[1][2] != sha {
		t.Errorf("get apps: want web True %s:\n%s%s", sha, r.stdout, r.stderr)
	}
	r = syncd(t, "reconcile", "app", "web", "-n", ns, "--wait", "--timeout", "60s")
	if r.code != exitOK || !strings.Contains(r.stdout, "App "+ns+"/web is Ready: applied revision "+sha) {
		t.Errorf("reconcile app --wait: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if r := syncd(t, "suspend", "app", "web", "-n", ns); r.code != exitOK {
		t.Fatalf("suspend: code %d\n%s", r.code, r.stderr)
	}
	r = syncd(t, "resume", "app", "web", "-n", ns, "--wait", "--timeout", "60s")
	if r.code != exitOK || !strings.Contains(r.stdout, "is Ready") {
		t.Errorf("resume app --wait: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// plan --app without --path: the GitSource and its Secret from the
	// cluster. The ConfigMap is as applied: no changes.
	r = syncd(t, "plan", "--app", "web", "-n", ns, "--inventory-namespace", invNamespace(t), "--cache-dir", t.TempDir())
	if r.code != exitOK || !strings.Contains(r.stdout, "revision "+sha) {
		t.Errorf("plan --app web: code %d, want %d at revision %s:\n%s%s", r.code, exitOK, sha, r.stdout, r.stderr)
	}
	if strings.Contains(r.stdout+r.stderr, token) {
		t.Errorf("plan --app printed the Secret's token")
	}
	if err := env.Clientset(t).CoreV1().Secrets(ns).Delete(ctx, "repo-auth", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	r = syncd(t, "plan", "--app", "web", "-n", ns, "--inventory-namespace", invNamespace(t), "--cache-dir", t.TempDir())
	if r.code != exitError || !strings.Contains(r.stderr, "GitSource "+ns+"/repo: Secret repo-auth cannot be read") {
		t.Errorf("plan --app with the Secret gone: code %d, want %d naming the Secret:\n%s%s", r.code, exitError, r.stdout, r.stderr)
	}
}
