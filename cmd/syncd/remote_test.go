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

	"syncd.dev/syncd/internal/inventory"
	"syncd.dev/syncd/internal/testenv"
)

// TestRemoteClusterCommands runs `syncd apply --config`, `plan` and
// `drift` for an app whose cluster section points at a second control
// plane, with --kubeconfig on the first: the objects and the inventory
// land on the second only, plan previews and drift reads the second.
func TestRemoteClusterCommands(t *testing.T) {
	second := testenv.StartT(t, testenv.Options{})
	ns, remoteInv := second.Namespace(t), second.Namespace(t)
	kcDir := t.TempDir()
	kubeconfig := filepath.Join(kcDir, "second.kubeconfig")
	data, err := os.ReadFile(second.Kubeconfig)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(kubeconfig, data, 0o600); err != nil {
		t.Fatal(err)
	}
	cfg := writeConfig(t, fmt.Sprintf("- name: far\n  source: repo\n  namespace: %s\n  cluster: {name: second, kubeconfigFile: %s, inventoryNamespace: %s}\n", ns, kubeconfig, remoteInv))
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue"})})
	ctx := context.Background()

	r := syncd(t, "apply", "--config", cfg, "--app", "far", "--path", dir)
	if r.code != exitOK {
		t.Fatalf("apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cm, err := second.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "seed", metav1.GetOptions{})
	if err != nil || cm.Data["color"] != "blue" {
		t.Fatalf("ConfigMap on the second cluster: %v %v", cm.Data, err)
	}
	if _, err := env.Clientset(t).CoreV1().Namespaces().Get(ctx, ns, metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("namespace %s on the first cluster: err = %v, want not found", ns, err)
	}
	if _, err := second.Clientset(t).CoreV1().Secrets(remoteInv).Get(ctx, inventory.ParentPrefix+"far", metav1.GetOptions{}); err != nil {
		t.Errorf("inventory on the second cluster: %v", err)
	}
	if _, err := env.Clientset(t).CoreV1().Secrets(invNamespace(t)).Get(ctx, inventory.ParentPrefix+"far", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("inventory on the first cluster: err = %v, want not found", err)
	}

	// The inventory on the second cluster shows the object unchanged:
	// nothing to do.
	if r := syncd(t, "plan", "--config", cfg, "--app", "far", "--path", dir); r.code != exitOK {
		t.Errorf("plan after apply: exit %d, want %d\n%s%s", r.code, exitOK, r.stdout, r.stderr)
	}
	if r := syncd(t, "drift", "--config", cfg, "--app", "far", "--path", dir); r.code != exitOK {
		t.Errorf("drift after apply: exit %d, want %d\n%s%s", r.code, exitOK, r.stdout, r.stderr)
	}
	_, err = second.Clientset(t).CoreV1().ConfigMaps(ns).Patch(ctx, "seed", types.MergePatchType, []byte(`{"data":{"color":"pink"}}`), metav1.PatchOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	r = syncd(t, "drift", "--config", cfg, "--app", "far", "--path", dir)
	if r.code != exitChanges || !strings.Contains(r.stdout, "operator") {
		t.Errorf("drift after a change on the second cluster: exit %d, want %d naming operator\n%s%s", r.code, exitChanges, r.stdout, r.stderr)
	}
	if r := syncd(t, "plan", "--config", cfg, "--app", "far", "--path", dir); r.code == exitOK {
		t.Errorf("plan after a change on the second cluster: exit 0, want the change shown\n%s", r.stdout)
	}

	t.Run("kubeconfig inside the rendered tree", func(t *testing.T) {
		inTree := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue"}), "kube/config": string(data)})
		cfg := writeConfig(t, fmt.Sprintf("- name: far\n  source: repo\n  namespace: %s\n  cluster: {kubeconfigFile: %s}\n", ns, filepath.Join(inTree, "kube/config")))
		r := syncd(t, "apply", "--config", cfg, "--app", "far", "--path", inTree)
		if r.code != exitError || !strings.Contains(r.stderr, "cluster.kubeconfigFile") || !strings.Contains(r.stderr, "is inside the repository the app renders") {
			t.Errorf("apply with the kubeconfig in the tree: exit %d, want %d and the refusal\n%s%s", r.code, exitError, r.stdout, r.stderr)
		}
		if strings.Contains(r.stdout+r.stderr, second.Config.BearerToken) {
			t.Error("the output shows the kubeconfig's token")
		}
	})
}
