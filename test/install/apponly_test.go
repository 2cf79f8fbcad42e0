package install

import (
	"context"
	"crypto/tls"
	"fmt"
	"io"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/dynamic"

	"syncd.dev/syncd/internal/api/v1alpha1"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestAppOnlyRunsAsServiceAccount runs the real binary with the
// Deployment's arguments of the App-only overlay (no --config; addresses
// moved to loopback, files to a temp dir) as the ServiceAccount
// syncd-system/syncd: it is ready with no config file, and it applies an
// App of a GitSource served from a loopback Git server, so the base's
// RBAC is enough for an App-only install.
func TestAppOnlyRunsAsServiceAccount(t *testing.T) {
	installBase(t)
	ctx := context.Background()
	tmp := t.TempDir()
	bin := buildSyncd(t, tmp)
	repo := gitserver.StartTest(t).NewTestRepo(t, "apps")
	sha, err := repo.Commit("first", map[string][]byte{
		"web/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: web\ndata:\n  value: \"1\"\n"),
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(tmp, "secret"), []byte("push-s3cret"), 0o600); err != nil {
		t.Fatal(err)
	}
	loopback := map[string]string{
		"--listen": "127.0.0.1:0", "--webhook-listen": "127.0.0.1:0",
		"--webhook-secret-file": filepath.Join(tmp, "secret"), "--cache-dir": filepath.Join(tmp, "cache"),
	}
	args := localArgs(t, syncdDeployment(t, kustomizeBuild(t, appOnlyOverlay)).Spec.Template.Spec.Containers[0].Args, loopback)
	// Its own Lease, apart from the other tests' syncd processes.
	args = append(args, "--leader-elect-name", "syncd-app-only-test")
	status, _ := startAsServiceAccount(t, bin, tmp, args)

	// --secure-status serves a self-signed certificate; /readyz is open.
	client := &http.Client{Transport: &http.Transport{TLSClientConfig: &tls.Config{InsecureSkipVerify: true}}, Timeout: 20 * time.Second}
	waitFor(t, "/readyz answers ok as the leader, with no config file", func() (bool, error) {
		resp, err := client.Get("https://" + status + "/readyz")
		if err != nil {
			return false, err
		}
		defer resp.Body.Close()
		body, _ := io.ReadAll(resp.Body)
		return resp.StatusCode == http.StatusOK && strings.TrimSpace(string(body)) == "ok", fmt.Errorf("%d %s", resp.StatusCode, body)
	})

	ns := env.Namespace(t)
	dyn := dynamic.NewForConfigOrDie(env.Config)
	apps := dyn.Resource(v1alpha1.AppResource).Namespace(ns)
	// Registered after the process started, so it runs first: syncd
	// removes the App's finalizer.
	t.Cleanup(func() {
		_ = apps.Delete(context.Background(), "web", metav1.DeleteOptions{})
		waitFor(t, "App web gone", func() (bool, error) {
			_, err := apps.Get(context.Background(), "web", metav1.GetOptions{})
			return apierrors.IsNotFound(err), err
		})
	})
	for _, m := range []string{
		fmt.Sprintf(`{"apiVersion":"syncd.dev/v1alpha1","kind":"GitSource","metadata":{"name":"repo"},"spec":{"url":%q,"branch":"main","interval":"1h"}}`, repo.URL),
		`{"apiVersion":"syncd.dev/v1alpha1","kind":"App","metadata":{"name":"web"},"spec":{"sourceRef":{"kind":"GitSource","name":"repo"},"path":"web"}}`,
	} {
		u := &unstructured.Unstructured{}
		if err := u.UnmarshalJSON([]byte(m)); err != nil {
			t.Fatal(err)
		}
		gvr := v1alpha1.AppResource
		if u.GetKind() == v1alpha1.KindGitSource {
			gvr = v1alpha1.GitSourceResource
		}
		if _, err := dyn.Resource(gvr).Namespace(ns).Create(ctx, u, metav1.CreateOptions{}); err != nil {
			t.Fatalf("create %s: %v", describe(u), err)
		}
	}
	waitFor(t, "App web Ready at "+sha, func() (bool, error) {
		u, err := apps.Get(ctx, "web", metav1.GetOptions{})
		if err != nil {
			return false, err
		}
		rev, _, _ := unstructured.NestedString(u.Object, "status", "lastAppliedRevision")
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			if c, ok := c.(map[string]any); ok && c["type"] == string(v1alpha1.ConditionReady) {
				return c["status"] == "True" && rev == sha, fmt.Errorf("Ready %v (%v) at %q", c["status"], c["message"], rev)
			}
		}
		return false, fmt.Errorf("no Ready condition yet")
	})
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "web", metav1.GetOptions{}); err != nil {
		t.Errorf("ConfigMap %s/web of the App: %v", ns, err)
	}
}
