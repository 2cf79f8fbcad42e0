package drift

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/ignore"
	"syncd.dev/syncd/internal/paths"
)

// TestIgnoreRules: a field another manager took over is set aside (in
// Report.Ignored, marked, not in Findings, so HasDrift is false) when a
// rule matches its kind, name, path and the other manager; a rule whose
// managers do not match, or another field, leaves it drift. Against the
// API server.
func TestIgnoreRules(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "app", Namespace: ns}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seed}\ndata: {color: blue, size: s}\n")
	c.applyPlan(t, plan, false)
	c.mergePatch(t, plan.Objects[0].Desired, "operator", `{"data":{"color":"green"}}`)
	live := c.live(t, plan)
	rule := func(managers ...string) *ignore.Rules {
		rs, err := ignore.New([]ignore.Rule{{Names: []string{"se*"}, Paths: []paths.Pattern{paths.MustParse(".data.color")}, Managers: managers}})
		if err != nil {
			t.Fatal(err)
		}
		return rs
	}
	tests := map[string]struct {
		rules            *ignore.Rules
		findings, ignore []string
	}{
		"no rule":         {findings: []string{".data.color"}},
		"any manager":     {rules: rule(), ignore: []string{".data.color"}},
		"the operator":    {rules: rule("oper*"), ignore: []string{".data.color"}},
		"another manager": {rules: rule("kubectl-*"), findings: []string{".data.color"}},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := Detect(plan, live, Options{Ignore: tc.rules})
			if diff := cmp.Diff(tc.findings, findingPaths(r.Findings)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if diff := cmp.Diff(tc.ignore, findingPaths(r.Ignored)); diff != "" {
				t.Errorf("ignored (-want +got):\n%s", diff)
			}
			for _, f := range r.Ignored {
				if !f.Ignored || f.Class != TakenOver || f.FieldPath.String() != fieldpath.MakePathOrDie("data", "color").String() {
					t.Errorf("ignored finding %+v, want marked, taken-over", f)
				}
			}
			if r.HasDrift() != (len(tc.findings) > 0) {
				t.Errorf("HasDrift = %v with findings %v", r.HasDrift(), tc.findings)
			}
		})
	}
}

func findingPaths(fs []Finding) []string {
	var out []string
	for _, f := range fs {
		out = append(out, f.Path)
	}
	return out
}
