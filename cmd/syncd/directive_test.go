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

	"syncd.dev/syncd/internal/preview"
)

// annotatedCM is a ConfigMap with data.k: v and one annotation (none
// when key is empty).
func annotatedCM(name, v, key, value string) string {
	ann := ""
	if key != "" {
		ann = fmt.Sprintf("\n  annotations: {%q: %q}", key, value)
	}
	return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: %s%s\ndata:\n  k: %q\n", name, ann, v)
}

// TestDirectivesEndToEnd: the per-object annotations through `syncd
// apply --config`, `syncd plan` and `syncd drift`, in both spellings. A
// reconcile-disabled object is never created, an IfNotPresent one is
// created once and never updated, an object Git marks reconcile: disabled
// or ssa: Ignore later is left as it is; none of them is drift when
// another writer changes it; an object with prune: disabled that leaves
// Git is kept in the cluster and reported as kept, not pruned.
func TestDirectivesEndToEnd(t *testing.T) {
	ns := env.Namespace(t)
	cfg := planConfig(t, ns, "")
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	ctx := context.Background()
	first := map[string]string{
		"stopped.yaml": annotatedCM("stopped", "1", "kustomize.toolkit.fluxcd.io/reconcile", "disabled"),
		"seeded.yaml":  annotatedCM("seeded", "1", "kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent"),
		"frozen.yaml":  annotatedCM("frozen", "1", "", ""),
		"quiet.yaml":   annotatedCM("quiet", "1", "", ""),
		"keep.yaml":    annotatedCM("keep", "1", "syncd.dev/prune", "disabled"),
	}
	r := syncd(t, "apply", "--config", cfg, "--app", "web", "--path", writeFiles(t, first))
	if r.code != exitOK || !strings.Contains(r.stdout, "stopped excluded") || !strings.Contains(r.stdout, "skipped: reconcile disabled (kustomize.toolkit.fluxcd.io/reconcile: disabled)") {
		t.Fatalf("first apply: code %d, want 0 and off excluded with its reason\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("first apply:\n%s", r.stdout)
	if _, err := cms.Get(ctx, "stopped", metav1.GetOptions{}); !apierrors.IsNotFound(err) {
		t.Errorf("a reconcile-disabled object was created (get: %v)", err)
	}

	second := map[string]string{
		"stopped.yaml": first["stopped.yaml"],
		"seeded.yaml":  annotatedCM("seeded", "2", "kustomize.toolkit.fluxcd.io/ssa", "IfNotPresent"),
		"frozen.yaml":  annotatedCM("frozen", "2", "syncd.dev/reconcile", "disabled"),
		"quiet.yaml":   annotatedCM("quiet", "2", "syncd.dev/ssa", "Ignore"),
	}
	dir := writeFiles(t, second)
	before := resourceVersions(t, ns)
	code, rep, stderr := planJSON(t, cfg, dir)
	if code != exitOK {
		t.Errorf("plan: exit %d, want 0 (nothing would change)\n%s", code, stderr)
	}
	got := map[string]preview.Action{}
	for _, o := range rep.Objects {
		got[o.Object.Name] = o.Action
		if (o.Action == preview.Skip || o.Action == preview.Keep) && (o.Skipped == "" || o.Diff != "") {
			t.Errorf("%s: %s with reason %q and diff %q, want a reason and no diff", o.Object, o.Action, o.Skipped, o.Diff)
		}
	}
	want := map[string]preview.Action{"stopped": preview.Skip, "seeded": preview.Skip, "frozen": preview.Skip, "quiet": preview.Skip, "keep": preview.Keep}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("plan actions (-want +got):\n%s", diff)
	}
	text := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir)
	for _, line := range []string{"skipped: exists, created only when missing (kustomize.toolkit.fluxcd.io/ssa: IfNotPresent)", "prune disabled (syncd.dev/prune: disabled)"} {
		if !strings.Contains(text.stdout, line) {
			t.Errorf("plan text lacks %q:\n%s", line, text.stdout)
		}
	}
	md := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", "markdown")
	for _, line := range []string{"#### Skipped on request", "reconcile disabled (syncd.dev/reconcile: disabled)", "left Git: **kept in the cluster** and dropped from the inventory (`syncd.dev/prune: disabled`)"} {
		if !strings.Contains(md.stdout, line) {
			t.Errorf("plan markdown lacks %q:\n%s", line, md.stdout)
		}
	}
	if diff := cmp.Diff(before, resourceVersions(t, ns)); diff != "" {
		t.Errorf("plan wrote: (-before +after):\n%s", diff)
	}

	for _, name := range []string{"seeded", "frozen", "quiet"} {
		if _, err := cms.Patch(ctx, name, types.MergePatchType, []byte(`{"data":{"k":"operator"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
			t.Fatal(err)
		}
	}
	if rep := driftJSON(t, exitOK, "--config", cfg, "--app", "web", "--path", dir); len(rep.Findings) != 0 {
		t.Errorf("drift of objects left alone on request: %+v", rep.Findings)
	}

	r = syncd(t, "apply", "--config", cfg, "--app", "web", "--path", dir)
	if r.code != exitOK || !strings.Contains(r.stdout, "kept") || strings.Contains(r.stdout, "deleted") {
		t.Fatalf("second apply: code %d, want 0 with keep kept, nothing deleted\n%s%s", r.code, r.stdout, r.stderr)
	}
	t.Logf("second apply:\n%s", r.stdout)
	for _, name := range []string{"seeded", "frozen", "quiet"} {
		cm, err := cms.Get(ctx, name, metav1.GetOptions{})
		if err != nil || cm.Data["k"] != "operator" {
			t.Errorf("%s after the apply: %v %v, want the operator's value left", name, cm.Data, err)
		}
	}
	if _, err := cms.Get(ctx, "keep", metav1.GetOptions{}); err != nil {
		t.Errorf("prune deleted an object with prune: disabled: %v", err)
	}
}
