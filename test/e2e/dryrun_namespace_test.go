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

// TestJourneyDryRunNewNamespace: a new app whose Git path holds its own
// Namespace and objects in it. syncd apply --dry-run cannot have the API
// server check the objects in the namespace (it does not exist yet), so
// it reports them created and not checked, saying why, and exits 0
// instead of failing on the namespace's NotFound; the cluster is left as
// it was (no namespace, no object, no inventory). The apply without
// --dry-run then creates what the dry run announced.
func TestJourneyDryRunNewNamespace(t *testing.T) {
	w := newWorkspace(t)
	const ns, app = "dry-run-new-ns-e2e", "dry-run-new-ns"
	repo := gitserver.StartTest(t).NewTestRepo(t, "drynewns")
	if _, err := repo.Commit("new app", map[string][]byte{
		"apps/web/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: " + ns + "}\n"),
		"apps/web/cm.yaml":        []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: web}\ndata: {a: git}\n"),
		"apps/web/sa.yaml":        []byte("apiVersion: v1\nkind: ServiceAccount\nmetadata: {name: web}\n"),
	}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: web
    git: {url: %q, branch: main, interval: 5m}
apps:
  - {name: %s, source: web, path: apps/web, namespace: %s}
`, repo.URL, app, ns))
	t.Cleanup(func() {
		_, _ = kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")
		_, _ = kubectl("-n", inventoryNamespace, "delete", "secret", "syncd-applyset-"+app, "--ignore-not-found")
	})

	r := w.must(exitOK, "apply", "--config", w.config, "--app", app, "--cache-dir", w.cache, "--dry-run")
	unchecked := "not checked: its namespace " + ns + " is created by this apply, so the API server cannot dry-run it before then: checked by the real apply"
	for _, want := range []string{
		"Namespace " + ns + " created (dry run)",
		"ConfigMap " + ns + "/web created (dry run)",
		"ServiceAccount " + ns + "/web created (dry run)",
		unchecked,
	} {
		if !strings.Contains(r.stdout, want) {
			t.Errorf("apply --dry-run: stdout lacks %q\n%s", want, r)
		}
	}
	if n := strings.Count(r.stdout, unchecked); n != 2 {
		t.Errorf("apply --dry-run: %d objects said not checked, want 2 (the ConfigMap and the ServiceAccount, not the Namespace)\n%s", n, r)
	}
	if strings.Contains(r.stderr, "not found") || strings.Contains(r.stdout, "failed") {
		t.Errorf("apply --dry-run reports a failure for the new namespace's objects\n%s", r)
	}
	cs := clientset(t)
	ctx := context.Background()
	for what, get := range map[string]func() error{
		"Namespace " + ns: func() error { _, err := cs.CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); return err },
		"ConfigMap web":   func() error { _, err := cs.CoreV1().ConfigMaps(ns).Get(ctx, "web", metav1.GetOptions{}); return err },
		"the app's inventory": func() error {
			_, err := cs.CoreV1().Secrets(inventoryNamespace).Get(ctx, "syncd-applyset-"+app, metav1.GetOptions{})
			return err
		},
	} {
		if err := get(); !apierrors.IsNotFound(err) {
			t.Errorf("after apply --dry-run, %s: get error %v, want NotFound (a dry run writes nothing)", what, err)
		}
	}

	r = w.must(exitOK, "apply", "--config", w.config, "--app", app, "--cache-dir", w.cache)
	if strings.Contains(r.stdout, "not checked") {
		t.Errorf("the real apply says not checked\n%s", r)
	}
	if got := mustKubectl(t, "-n", ns, "get", "configmap/web", "serviceaccount/web", "-o", "name"); got != "configmap/web\nserviceaccount/web\n" {
		t.Errorf("after the real apply: kubectl get printed %q, want the ConfigMap and the ServiceAccount", got)
	}
}
