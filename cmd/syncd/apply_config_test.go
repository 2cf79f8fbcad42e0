package main

import (
	"context"
	"fmt"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestApplyConfigPolicySeed runs the seed through `syncd apply --config`
// with two apps (two managers) on one ConfigMap, under each conflict
// policy, including after an out-of-band merge patch by "operator".
func TestApplyConfigPolicySeed(t *testing.T) {
	ns := env.Namespace(t)
	cfgFor := func(policy string) string {
		return writeConfig(t, fmt.Sprintf("- name: team-a\n  source: repo\n  namespace: %s\n- name: team-b\n  source: repo\n  namespace: %s\n  pruneBudget: 100\n  conflicts:\n    default: %s\n", ns, ns, policy))
	}
	applyFiles := func(app, policy string, files map[string]string) result {
		t.Helper()
		r := syncd(t, "apply", "--config", cfgFor(policy), "--app", app, "--path", writeFiles(t, files))
		t.Logf("syncd apply --config syncd.yaml --app %s (conflicts.default: %s): exit %d\n%s%s", app, policy, r.code, r.stdout, r.stderr)
		return r
	}
	apply := func(app, policy string, data map[string]string) result {
		t.Helper()
		return applyFiles(app, policy, map[string]string{"cm.yaml": configMapYAML(ns, data)})
	}
	color := func() string { return getConfigMap(t, ns).Data["color"] }
	// dataOwners is who owns which .data key (the managers annotation and
	// the inventory label are not part of the seed).
	dataOwners := func() map[string][]string {
		out := map[string][]string{}
		for m, fields := range leafOwners(t, getConfigMap(t, ns).ManagedFields) {
			for _, f := range fields {
				if strings.HasPrefix(f, ".data.") {
					out[m] = append(out[m], f)
				}
			}
		}
		return out
	}
	operatorPatch := func(value string) {
		t.Helper()
		_, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Patch(context.Background(), "seed", types.MergePatchType,
			[]byte(`{"data":{"color":"`+value+`"}}`), metav1.PatchOptions{FieldManager: "operator"})
		if err != nil {
			t.Fatal(err)
		}
	}

	if r := apply("team-a", "fail", map[string]string{"color": "blue", "size": "s"}); r.code != exitOK {
		t.Fatalf("team-a: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	// team-b owns an object of its own, which its next render drops: a
	// prune would delete it (its budget allows it).
	extra := "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: b-extra\n  namespace: " + ns + "\ndata:\n  k: v\n"
	if r := applyFiles("team-b", "fail", map[string]string{"extra.yaml": extra}); r.code != exitOK {
		t.Fatalf("team-b's own object: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}

	// fail: exit 3, the object untouched, nothing pruned.
	before := getConfigMap(t, ns)
	r := apply("team-b", "fail", map[string]string{"color": "green"})
	if r.code != exitConflict || !strings.Contains(r.stdout, `.data.color is owned by "syncd-team-a"`) || strings.Contains(r.stdout, "conflict: .metadata.labels") {
		t.Fatalf("fail policy: code %d, want %d and a conflict on .data.color only\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
	after := getConfigMap(t, ns)
	if after.ResourceVersion != before.ResourceVersion {
		t.Errorf("fail policy wrote the ConfigMap: resourceVersion %s → %s", before.ResourceVersion, after.ResourceVersion)
	}
	if diff := cmp.Diff(before.Data, after.Data); diff != "" {
		t.Errorf("fail policy changed .data (-before +after):\n%s", diff)
	}
	if !strings.Contains(r.stdout, "prune: refused: not pruning: the apply did not complete") {
		t.Errorf("fail policy: output does not say the prune was refused:\n%s", r.stdout)
	}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "b-extra", metav1.GetOptions{}); err != nil {
		t.Errorf("a run that ended in a conflict pruned team-b's b-extra (get: %v)", err)
	}

	// Shared ownership: team-b declares team-a's key with the equal value,
	// under fail. The object stays in team-a's inventory: team-b leaves
	// it the part-of label (an object belongs to one ApplySet) and says
	// so, and yields nothing.
	r = apply("team-b", "fail", map[string]string{"color": "blue", "owner": "b"})
	if r.code != exitOK || strings.Contains(r.stdout, "yielded") || !strings.Contains(r.stdout, "seed configured") ||
		!strings.Contains(r.stdout, `shared: the object is in another app's inventory (.metadata.labels.applyset.kubernetes.io/part-of is owned by "syncd-team-a"`) {
		t.Fatalf("equal value: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	want := map[string][]string{
		"syncd-team-a": {".data.color", ".data.size"},
		"syncd-team-b": {".data.color", ".data.owner"},
	}
	if diff := cmp.Diff(want, dataOwners()); diff != "" {
		t.Errorf("ownership after an equal-value apply (-want +got):\n%s", diff)
	}
	if _, err := env.Clientset(t).CoreV1().ConfigMaps(ns).Get(context.Background(), "b-extra", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("b-extra left team-b's render and its run succeeded, yet it was not pruned (get: %v)", err)
	}

	// Omission: team-a drops size; only that key goes, team-b's stays.
	r = apply("team-a", "fail", map[string]string{"color": "blue"})
	if r.code != exitOK {
		t.Fatalf("team-a dropping size: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	if diff := cmp.Diff(map[string]string{"color": "blue", "owner": "b"}, getConfigMap(t, ns).Data); diff != "" {
		t.Errorf("data after team-a dropped size (-want +got):\n%s", diff)
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
	operatorPatch("red")
	r = apply("team-b", "fail", map[string]string{"color": "green", "owner": "b"})
	if r.code != exitConflict || !strings.Contains(r.stdout, `.data.color is owned by "operator" (Update)`) || color() != "red" {
		t.Fatalf("after operator, fail: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
	r = apply("team-b", "force", map[string]string{"color": "green", "owner": "b"})
	if r.code != exitOK || color() != "green" {
		t.Fatalf("after operator, force: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
	// The operator writes again; under yield team-b leaves its value.
	operatorPatch("red")
	r = apply("team-b", "yield", map[string]string{"color": "green", "owner": "b"})
	if r.code != exitOK || !strings.Contains(r.stdout, `yielded: .data.color is owned by "operator" (Update)`) || color() != "red" {
		t.Fatalf("after operator, yield: code %d, color %q\n%s%s", r.code, color(), r.stdout, r.stderr)
	}
}
