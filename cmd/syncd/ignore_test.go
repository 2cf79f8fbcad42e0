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

	plan := syncd(t, "plan", "--config", cfg, "--app", "web", "--path", dir)
	if !strings.Contains(plan.stdout, "ignored: .data.color differs from Git") || !strings.Contains(plan.stdout, "+  color: blue") {
		t.Errorf("plan does not show the ignored field in its diff, marked:\n%s", plan.stdout)
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
}
