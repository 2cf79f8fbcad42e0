package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/dynamic"
)

// TestTenantCLI: for an app with serviceAccountName that may create but
// not delete ConfigMaps, syncd plan previews the prune refused as
// forbidden (exit 3) and syncd apply refuses it the same way, the object
// staying; syncd drift reports an object in a namespace the account may
// not read as not readable by it, without its value.
func TestTenantCLI(t *testing.T) {
	ctx := context.Background()
	ns, other := env.Namespace(t), env.Namespace(t)
	if _, err := env.ServiceAccountConfig(ctx, ns, "deployer"); err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, ns, "deployer", ns, []rbacv1.PolicyRule{{
		APIGroups: []string{""}, Resources: []string{"configmaps"}, Verbs: []string{"get", "list", "watch", "create", "patch"},
	}}); err != nil {
		t.Fatal(err)
	}
	user := "system:serviceaccount:" + ns + ":deployer"
	cfg := planConfig(t, ns, "  serviceAccountName: deployer\n  pruneBudget: 100\n")
	applyApp(t, cfg, map[string]string{"a.yaml": cmYAML("a", "  k: a\n"), "b.yaml": cmYAML("b", "  k: b\n")})
	onlyA := writeFiles(t, map[string]string{"a.yaml": cmYAML("a", "  k: a\n")})

	code, rep, stderr := planJSON(t, cfg, onlyA)
	if code != exitConflict {
		t.Errorf("plan exit code %d, want %d\n%s", code, exitConflict, stderr)
	}
	if rep.Prune == nil || rep.Prune.Refused == nil || rep.Prune.Refused.Reason != "forbidden" {
		t.Fatalf("plan's prune preview = %+v, want refused as forbidden", rep.Prune)
	}
	for _, want := range []string{user, "delete ConfigMap " + ns + "/b"} {
		if !strings.Contains(rep.Prune.Refused.Message, want) {
			t.Errorf("plan's refusal %q does not name %q", rep.Prune.Refused.Message, want)
		}
	}

	r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", onlyA)
	out := r.stdout + r.stderr
	for _, want := range []string{"forbidden", user, "delete ConfigMap " + ns + "/b"} {
		if !strings.Contains(out, want) {
			t.Errorf("apply output does not say %q (exit %d):\n%s", want, r.code, out)
		}
	}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(ctx, "b", metav1.GetOptions{}); err != nil {
		t.Fatalf("ConfigMap b after the refused prune: %v", err)
	}

	if _, err := env.Clientset(t).CoreV1().ConfigMaps(other).Create(ctx, &corev1.ConfigMap{
		ObjectMeta: metav1.ObjectMeta{Name: "theirs"}, Data: map[string]string{"k": "other-tenants-secret-value"},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	theirs := fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: theirs\n  namespace: %s\ndata:\n  k: mine\n", other)
	dir := writeFiles(t, map[string]string{"a.yaml": cmYAML("a", "  k: a\n"), "theirs.yaml": theirs})
	for _, format := range []string{"text", "json", "markdown"} {
		r := syncd(t, "drift", "--config", cfg, "--app", "web", "--path", dir, "-o", format)
		if r.code != exitOK {
			t.Errorf("drift -o %s: exit %d, want %d (an unreadable object is not drift)\n%s%s", format, r.code, exitOK, r.stdout, r.stderr)
		}
		if !strings.Contains(r.stdout, "ConfigMap "+other+"/theirs: not readable by "+user) {
			t.Errorf("drift -o %s does not report the object as not readable by the account:\n%s", format, r.stdout)
		}
		if strings.Contains(r.stdout+r.stderr, "other-tenants-secret-value") {
			t.Errorf("drift -o %s shows the unreadable object's value:\n%s", format, r.stdout)
		}
	}
}

// TestTreeAsTenantNamesTheInventory: syncd tree run by a tenant who may
// read its Apps but not syncd's inventory namespace says the
// inventories are syncd's and whose credentials to use, not to create a
// namespace that exists.
func TestTreeAsTenantNamesTheInventory(t *testing.T) {
	ctx := context.Background()
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	freshAppCRDs(t, dyn)
	ns := env.Namespace(t)
	if _, err := env.ServiceAccountConfig(ctx, ns, "viewer"); err != nil {
		t.Fatal(err)
	}
	if err := env.Grant(ctx, ns, "viewer", ns, []rbacv1.PolicyRule{{APIGroups: []string{"syncd.dev"}, Resources: []string{"apps"}, Verbs: []string{"get", "list"}}}); err != nil {
		t.Fatal(err)
	}
	createObjects(t, dyn, ns, sourceJSON, appJSON("web"))
	res := syncd(t, "tree", "app", "web", "-n", ns, "--inventory-namespace", invNamespace(t), "--as", "system:serviceaccount:"+ns+":viewer")
	if res.code != exitError || !strings.Contains(res.stderr, "a tenant may not read") || strings.Contains(res.stderr, "create it") {
		t.Errorf("tree as a tenant: exit %d, want %d and a message saying the inventories are syncd's:\n%s%s", res.code, exitError, res.stdout, res.stderr)
	}
}
