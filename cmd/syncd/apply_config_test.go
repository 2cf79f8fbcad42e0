package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestApplyConfigPolicySeed runs the seed through `syncd apply --config`
// with two apps (two managers) on one ConfigMap, under each conflict
// policy, including after an out-of-band merge patch by "operator".
func TestApplyConfigPolicySeed(t *testing.T) {
	ns := env.Namespace(t)
	apply := func(app, policy string, data map[string]string) result {
		t.Helper()
		cfg := writeConfig(t, fmt.Sprintf("- name: team-a\n  source: repo\n  namespace: %s\n- name: team-b\n  source: repo\n  namespace: %s\n  conflicts:\n    default: %s\n", ns, ns, policy))
		dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, data)})
		return syncd(t, "apply", "--config", cfg, "--app", app, "--path", dir)
	}
	color := func() string { return getConfigMap(t, ns).Data["color"] }

	if r := apply("team-a", "fail", map[string]string{"color": "blue", "size": "s"}); r.code != exitOK {
		t.Fatalf("team-a: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// fail: exit 3, the object untouched.
	r := apply("team-b", "fail", map[string]string{"color": "green"})
	if r.code != exitConflict || !strings.Contains(r.stdout, `.data.color is owned by "syncd-team-a"`) || color() != "blue" {
		t.Fatalf("fail policy: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
	// yield: team-b applies the rest and leaves color to team-a.
	r = apply("team-b", "yield", map[string]string{"color": "green", "owner": "b"})
	if r.code != exitOK || !strings.Contains(r.stdout, "yielded") || color() != "blue" || getConfigMap(t, ns).Data["owner"] != "b" {
		t.Fatalf("yield policy: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
	// force: team-b takes color.
	r = apply("team-b", "force", map[string]string{"color": "green", "owner": "b"})
	if r.code != exitOK || !strings.Contains(r.stdout, "forced") || color() != "green" {
		t.Fatalf("force policy: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
	// An out-of-band merge patch by "operator"; team-b under fail reports
	// the operator as the owner; under force it reverts.
	_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "seed", types.MergePatchType,
		[]byte(`{"data":{"color":"red"}}`), metav1.PatchOptions{FieldManager: "operator"})
	if err != nil {
		t.Fatal(err)
	}
	r = apply("team-b", "fail", map[string]string{"color": "green", "owner": "b"})
	if r.code != exitConflict || !strings.Contains(r.stdout, `.data.color is owned by "operator" (Update)`) || color() != "red" {
		t.Fatalf("after operator, fail: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
	r = apply("team-b", "force", map[string]string{"color": "green", "owner": "b"})
	if r.code != exitOK || color() != "green" {
		t.Fatalf("after operator, force: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
}
