package e2e

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/testenv"
	"syncd.dev/syncd/internal/testenv/gitserver"
)

// edgeRepo is the app a fleet repository applies to an edge cluster: a
// namespace, its settings and a gateway.
func edgeRepo(upstream string) map[string][]byte {
	return map[string][]byte{
		"clusters/edge-eu/namespace.yaml": []byte("apiVersion: v1\nkind: Namespace\nmetadata: {name: edge-gateway}\n"),
		"clusters/edge-eu/settings.yaml": []byte(fmt.Sprintf(`apiVersion: v1
kind: ConfigMap
metadata: {name: gateway-settings, namespace: edge-gateway}
data:
  upstream: %s
  region: eu-central
`, upstream)),
		"clusters/edge-eu/gateway.yaml": []byte(`apiVersion: apps/v1
kind: Deployment
metadata: {name: gateway, namespace: edge-gateway}
spec:
  replicas: 2
  selector: {matchLabels: {app: gateway}}
  template:
    metadata: {labels: {app: gateway}}
    spec:
      containers:
        - name: gateway
          image: ghcr.io/example/gateway:1.8.0
          envFrom: [{configMapRef: {name: gateway-settings}}]
`),
	}
}

// deployerRules are what docs/clusters.md ("RBAC on the target") says the
// kubeconfig's user needs on the target: the kinds the app applies and
// prunes, cluster-wide, and Secrets in the inventory namespace.
var deployerRules = struct{ kinds, inventory []rbacv1.PolicyRule }{
	kinds: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"namespaces", "configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
		{APIGroups: []string{"apps"}, Resources: []string{"deployments"}, Verbs: []string{"get", "list", "watch", "create", "patch", "delete"}},
	},
	inventory: []rbacv1.PolicyRule{
		{APIGroups: []string{""}, Resources: []string{"secrets"}, Verbs: []string{"get", "list", "watch", "create", "update", "patch", "delete"}},
	},
}

// deployerKubeconfig gives the service account syncd-system/syncd-deployer
// of the second cluster the documented rights and returns a kubeconfig
// for it (its token inline, as a secretRef kubeconfig must have it) and
// the token.
func deployerKubeconfig(t *testing.T, second *testenv.Env) (kubeconfig []byte, token string) {
	t.Helper()
	ctx := context.Background()
	if _, err := second.Clientset(t).CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: inventoryNamespace}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	cfg, err := second.ServiceAccountConfig(ctx, inventoryNamespace, "syncd-deployer")
	if err != nil {
		t.Fatal(err)
	}
	if err := second.Grant(ctx, inventoryNamespace, "syncd-deployer", "", deployerRules.kinds); err != nil {
		t.Fatal(err)
	}
	if err := second.Grant(ctx, inventoryNamespace, "syncd-deployer", inventoryNamespace, deployerRules.inventory); err != nil {
		t.Fatal(err)
	}
	return writeKubeconfig(t, cfg), cfg.BearerToken
}

// writeKubeconfig returns the kubeconfig testenv writes for cfg.
func writeKubeconfig(t *testing.T, cfg *rest.Config) []byte {
	t.Helper()
	p := filepath.Join(t.TempDir(), "kubeconfig")
	if err := testenv.WriteKubeconfig(cfg, p); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(p)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// putKubeconfigSecret stores kubeconfig in the Secret name of syncd's
// namespace on the local cluster (key value, the default of
// secretRef.key), removed when the test ends.
func putKubeconfigSecret(t *testing.T, name string, kubeconfig []byte) {
	t.Helper()
	secrets := clientset(t).CoreV1().Secrets(inventoryNamespace)
	s := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: inventoryNamespace}, Data: map[string][]byte{"value": kubeconfig}}
	if _, err := secrets.Create(context.Background(), s, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := secrets.Delete(context.Background(), name, metav1.DeleteOptions{}); err != nil && !apierrors.IsNotFound(err) {
			t.Error(err)
		}
	})
}

// TestJourneyRemoteCluster: an app whose cluster section names a
// kubeconfig Secret in syncd's namespace is applied to a second control
// plane, through a service account's token with the rights
// docs/clusters.md lists: its objects and its inventory land there and
// nothing of it on syncd's own cluster; the token is never printed.
func TestJourneyRemoteCluster(t *testing.T) {
	w := newWorkspace(t)
	second := testenv.StartT(t, testenv.Options{})
	kubeconfig, token := deployerKubeconfig(t, second)
	putKubeconfigSecret(t, "edge-eu-kubeconfig", kubeconfig)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "fleet")
	if _, err := repo.Commit("edge-eu gateway", edgeRepo("https://api.example.com")); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: fleet
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: edge-gateway
    source: fleet
    path: clusters/edge-eu
    namespace: edge-gateway
    cluster:
      name: edge-eu
      secretRef: {name: edge-eu-kubeconfig}
`, repo.URL))

	remote := newClusterFor(t, second.Config)
	settings := objectRef{kind: "ConfigMap", namespace: "edge-gateway", name: "gateway-settings"}
	j := &journey{
		w: w, app: "edge-gateway", cluster: remote,
		render:   []string{"--path", repo.Work + "/clusters/edge-eu"},
		rendered: []string{"name: gateway-settings", "upstream: https://api.example.com"},
		planned:  []string{"ConfigMap edge-gateway/gateway-settings"},
		secrets:  []string{token},
		change: func() func(*testing.T) {
			if _, err := repo.Commit("edge-eu: new upstream", edgeRepo("https://api-eu.example.com")); err != nil {
				t.Fatal(err)
			}
			return func(t *testing.T) {
				checkData(t, remote, settings, map[string]string{"upstream": "https://api-eu.example.com", "region": "eu-central"})
			}
		},
	}
	j.run(t)
	checkOnlyOn(t, remote, newCluster(t), "edge-gateway")
	t.Run("syncd run follows the app home", func(t *testing.T) {
		checkMovedHome(t, w, repo.URL, remote, newCluster(t), settings)
	})
	w.checkNoSecrets(token)
}

// checkMovedHome runs syncd run on the journey's config, then removes the
// app's cluster section from syncd.yaml: the daemon applies the app to
// syncd's own cluster and prunes its objects on the second one, under
// the per-object guards; the settings ConfigMap is checked on both.
func checkMovedHome(t *testing.T, w *workspace, repoURL string, remote, local *cluster, settings objectRef) {
	d := w.startDaemon()
	d.waitApplied("edge-gateway", func(string) bool { return true })
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: fleet
    git: {url: %s, branch: main, interval: 1m}
apps:
  - name: edge-gateway
    source: fleet
    path: clusters/edge-eu
    namespace: edge-gateway
`, repoURL))
	waitFor(t, "the app applied to syncd's own cluster and pruned from the second", 2*time.Minute, func() (bool, string) {
		_, localErr := local.get(settings)
		_, remoteErr := remote.get(settings)
		return localErr == nil && apierrors.IsNotFound(remoteErr), fmt.Sprintf("local: %v, second: %v\n%s", localErr, remoteErr, tail(d.logText(), 3000))
	})
	if left := d.waitLogged("app moved off a cluster; its objects there were pruned under its prune rules", "left"); left != "edge-eu" {
		t.Errorf("the log names the cluster left as %q, want edge-eu", left)
	}
	d.stop()
}

// checkOnlyOn fails unless the app's namespace and inventory are on the
// remote cluster and not on the local one.
func checkOnlyOn(t *testing.T, remote, local *cluster, app string) {
	t.Helper()
	refs := []objectRef{
		{kind: "Namespace", name: "edge-gateway"},
		{group: "apps", kind: "Deployment", namespace: "edge-gateway", name: "gateway"},
		{kind: "Secret", namespace: inventoryNamespace, name: inventory.ParentPrefix + app},
	}
	for _, ref := range refs {
		if _, err := remote.get(ref); err != nil {
			t.Errorf("%s on the second cluster: %v", ref, err)
		}
		if _, err := local.get(ref); !apierrors.IsNotFound(err) {
			t.Errorf("%s on syncd's own cluster: err = %v, want not found", ref, err)
		}
	}
}
