package main

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
)

// TestIgnoreRulesEndToEnd: a field an ignore rule matches, changed by
// another writer (an Update by "operator", as kubectl edit or a
// controller does), is reported by nobody (`syncd drift` exits 0), is
// listed, marked, with --show-ignored, is not reverted by `syncd apply
// --config` (no conflict either: the live value is sent), and `syncd
// plan` still shows it in the diff, marked ignored. A field no rule
// matches is still drift.
func TestIgnoreRulesEndToEnd(t *testing.T) {
	ns := env.Namespace(t)
	cfg := writeConfig(t, fmt.Sprintf(`- name: web
  source: repo
  namespace: %s
  ignore:
    - kinds: [ConfigMap]
      names: ["se*"]
      paths: [.data.color]
      managers: ["oper*"]
`, ns))
	dir := writeFiles(t, map[string]string{"cm.yaml": configMapYAML(ns, map[string]string{"color": "blue", "size": "s"})})
	if r := syncd(t, "apply", "--config", cfg, "--path", dir); r.code != exitOK {
		t.Fatalf("apply: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cms := env.Clientset(t).CoreV1().ConfigMaps(ns)
	if _, err := cms.Patch(context.Background(), "seed", types.MergePatchType, []byte(`{"data":{"color":"green"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}

	if rep := driftJSON(t, exitOK, "--config", cfg, "--path", dir); len(rep.Findings) != 0 {
		t.Errorf("drift of an ignored field: %+v", rep.Findings)
	}
	r := syncd(t, "drift", "--config", cfg, "--path", dir, "--show-ignored", "-o", "json")
	var shown struct {
		Findings []driftFinding `json:"findings"`
		Ignored  []struct {
			Path    string `json:"path"`
			Class   string `json:"class"`
			Ignored bool   `json:"ignored"`
		} `json:"ignored"`
	}
	if err := json.Unmarshal([]byte(r.stdout), &shown); err != nil || r.code != exitOK {
		t.Fatalf("drift --show-ignored: code %d, %v\n%s%s", r.code, err, r.stdout, r.stderr)
	}
	if len(shown.Findings) != 0 || len(shown.Ignored) != 1 || shown.Ignored[0].Path != ".data.color" || !shown.Ignored[0].Ignored || shown.Ignored[0].Class != "taken-over" {
		t.Errorf("drift --show-ignored = %+v, want .data.color taken-over, marked ignored, and no finding", shown)
	}
	text := syncd(t, "drift", "--config", cfg, "--path", dir, "--show-ignored")
	if !strings.Contains(text.stdout, "ignored: ConfigMap "+ns+"/seed:") || !strings.Contains(text.stdout, "no drift") {
		t.Errorf("drift --show-ignored text lacks the marked field:\n%s", text.stdout)
	}

	md := syncd(t, "drift", "--config", cfg, "--path", dir, "--show-ignored", "-o", "markdown")
	if md.code != exitOK || !strings.Contains(md.stdout, "No drift.") || !strings.Contains(md.stdout, "| `ConfigMap "+ns+"/seed` | `.data.color` | taken-over |") {
		t.Errorf("drift --show-ignored -o markdown: code %d, lacks the marked field:\n%s%s", md.code, md.stdout, md.stderr)
	}

	// Only an ignored field differs: the plan shows it, marked, and
	// exits 0 (the apply would change nothing).
	plan := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir)
	if plan.code != exitOK {
		t.Errorf("plan when only an ignored field differs: code %d, want %d\n%s%s", plan.code, exitOK, plan.stdout, plan.stderr)
	}
	if !strings.Contains(plan.stdout, "ignored: .data.color differs from Git") || !strings.Contains(plan.stdout, "+  color: blue") || !strings.Contains(plan.stdout, "1 of the updates only in ignored fields") {
		t.Errorf("plan does not show the ignored field in its diff, marked:\n%s", plan.stdout)
	}
	mdPlan := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir, "-o", "markdown")
	if !strings.Contains(mdPlan.stdout, "- ignored: `.data.color` differs from Git") {
		t.Errorf("plan -o markdown does not mark the ignored field:\n%s", mdPlan.stdout)
	}

	r = syncd(t, "apply", "--config", cfg, "--path", dir)
	if r.code != exitOK {
		t.Fatalf("apply after the operator's change: code %d\n%s%s", r.code, r.stdout, r.stderr)
	}
	cm, err := cms.Get(context.Background(), "seed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if cm.Data["color"] != "green" {
		t.Errorf("apply reverted an ignored field: color = %q, want the operator's green\n%s", cm.Data["color"], r.stdout)
	}

	// Not ignored: the same change to .data.size is drift.
	if _, err := cms.Patch(context.Background(), "seed", types.MergePatchType, []byte(`{"data":{"size":"xl"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	if rep := driftJSON(t, exitChanges, "--config", cfg, "--path", dir); len(rep.Findings) != 1 || rep.Findings[0].Path != ".data.size" {
		t.Errorf("drift of a field no rule matches: %+v, want .data.size only", rep.Findings)
	}
	// An ignored field and one no rule matches differ: the plan does not
	// exit 0 (here 3: the operator owns .data.size, a blocking conflict).
	if _, err := cms.Patch(context.Background(), "seed", types.MergePatchType, []byte(`{"data":{"color":"red"}}`), metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	if r := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir); r.code != exitConflict || strings.Contains(r.stdout, "only in ignored fields") {
		t.Errorf("plan with an ignored and a not ignored difference: code %d, want %d, not marked only-ignored\n%s%s", r.code, exitConflict, r.stdout, r.stderr)
	}
}
