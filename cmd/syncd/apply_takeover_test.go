package main

import (
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// kubectlApplyFile runs the test control plane's kubectl apply on dir
// with extra flags (--server-side --field-manager m for an SSA tool).
func kubectlApplyFile(t *testing.T, dir string, flags ...string) {
	t.Helper()
	args := append([]string{"--kubeconfig", env.Kubeconfig, "apply", "-f", dir}, flags...)
	if out, err := exec.Command(filepath.Join(env.BinDir, "kubectl"), args...).CombinedOutput(); err != nil {
		t.Fatalf("kubectl %v: %v\n%s", args, err, out)
	}
}

// TestApplyNoSilentTakeover: a ConfigMap another team created with
// client-side kubectl apply (color: blue) is declared by an app with
// color: red under conflicts: fail. syncd plan shows the conflict (and no
// move: the object is refused whole); syncd apply exits 3 naming
// kubectl-client-side-apply and .data.color, and the value stays blue.
func TestApplyNoSilentTakeover(t *testing.T) {
	ns := env.Namespace(t)
	theirs := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue", "size": "small"})})
	kubectlApplyFile(t, theirs)
	cfg := writeConfig(t, "- name: web\n  source: repo\n  namespace: "+ns+"\n  conflicts: {default: fail}\n")
	ours := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "red", "size": "small"})})

	r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", ours)
	t.Logf("syncd plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	// The object is refused, so nothing of it would move either.
	if !strings.Contains(r.stdout, `conflict: .data.color is owned by "kubectl-client-side-apply": fail`) || strings.Contains(r.stdout, "ownership:") {
		t.Errorf("plan output: want the conflict on .data.color and no ownership move")
	}
	if r.code != exitConflict {
		t.Errorf("plan: exit %d, want %d", r.code, exitConflict)
	}

	r = syncd(t, "apply", "--config", cfg, "--app", "web", "--path", ours)
	t.Logf("syncd apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != exitConflict || !strings.Contains(r.stdout, `.data.color is owned by "kubectl-client-side-apply"`) {
		t.Errorf("apply: exit %d, want %d and a conflict naming .data.color and kubectl-client-side-apply", r.code, exitConflict)
	}
	if strings.Contains(r.stdout, "migrated:") || strings.Contains(r.stdout, "moved:") {
		t.Errorf("apply under fail reported a takeover:\n%s", r.stdout)
	}
	if got := getConfigMap(t, ns).Data["color"]; got != "blue" {
		t.Errorf(".data.color = %q after apply under fail, want blue", got)
	}
}

// TestApplyMigrateFromKustomizeController: objects applied by
// kubectl --server-side as kustomize-controller from the same manifests
// are shared with it, and syncd drift says so, until the app migrates
// from it; then syncd's manager owns them alone and drift exits 0.
func TestApplyMigrateFromKustomizeController(t *testing.T) {
	ns := env.Namespace(t)
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue", "size": "small"})})
	kubectlApplyFile(t, dir, "--server-side", "--field-manager", "kustomize-controller")
	cfg := writeConfig(t, "- name: web\n  source: repo\n  namespace: "+ns+"\n  migrate:\n    from: [kustomize-controller]\n")

	r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir)
	t.Logf("syncd plan: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if !strings.Contains(r.stdout, "ownership: .data.color moves from kustomize-controller to syncd-web") {
		t.Errorf("plan does not show .data.color moving from kustomize-controller")
	}
	r = syncd(t, "apply", "--config", cfg, "--app", "web", "--path", dir)
	t.Logf("syncd apply: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != exitOK || !strings.Contains(r.stdout, `moved: .data.color from "kustomize-controller" to "syncd-web", value unchanged`) {
		t.Fatalf("apply with migrate: exit %d, want 0 and the move reported", r.code)
	}
	owners := leafOwners(t, getConfigMap(t, ns).ManagedFields)
	if _, ok := owners["kustomize-controller"]; ok {
		t.Errorf("kustomize-controller still owns %v", owners["kustomize-controller"])
	}
	if got := owners["syncd-web"]; !strings.Contains(strings.Join(got, " "), ".data.color") || !strings.Contains(strings.Join(got, " "), ".data.size") {
		t.Errorf("syncd-web owns %v, want .data.color and .data.size", got)
	}
	r = syncd(t, "drift", "--config", cfg, "--app", "web", "--path", dir)
	t.Logf("syncd drift: exit %d\n%s%s", r.code, r.stdout, r.stderr)
	if r.code != exitOK {
		t.Errorf("drift after the migration: exit %d, want 0", r.code)
	}
}
