package drift

import (
	"bytes"
	"strings"
	"testing"

	"github.com/google/go-cmp/cmp"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
	"syncd.dev/syncd/internal/redact"
)

// yieldTo is a conflict policy that yields every field to one manager.
type yieldTo string

func (y yieldTo) Yields(_ planner.ObjectRef, manager string, _ fieldpath.Path) bool {
	return manager == string(y)
}

const settings = `
apiVersion: v1
kind: ConfigMap
metadata: {name: settings}
data: {color: blue, password: from-git-hunter2}
`

// TestSensitiveServer: a ConfigMap key the config marks sensitive is
// taken over on a real API server; the finding names the field and says
// the value differs, and no report format prints either value.
func TestSensitiveServer(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	app := config.App{Name: "app", Namespace: ns, AppSpec: config.AppSpec{Sensitive: []config.SensitiveRule{{Kinds: []string{"ConfigMap"}, Paths: []string{".data.password"}}}}}
	rule, err := redact.ParseSensitive(app.Sensitive[0].Kinds, app.Sensitive[0].Paths)
	if err != nil {
		t.Fatal(err)
	}
	sens := redact.New(redact.Options{Sensitive: []redact.Sensitive{rule}})
	plan := mustPlan(t, app, settings)
	c.applyPlan(t, plan, false)
	c.mergePatch(t, plan.Objects[0].Desired, "operator", `{"data":{"color":"green","password":"live-rotated-s3cret"}}`)

	r := Detect(plan, c.live(t, plan), Options{Sensitive: sens})
	want := []found{
		{Object: "ConfigMap/settings", Path: ".data.color", Class: "taken-over", Culprit: "operator", Operation: "Update", Desired: "blue", Live: "green"},
		{Object: "ConfigMap/settings", Path: ".data.password", Class: "taken-over", Culprit: "operator", Operation: "Update", Desired: redact.Marker, Live: redact.Marker},
	}
	if diff := cmp.Diff(want, summarize(r)); diff != "" {
		t.Errorf("findings (-want +got):\n%s", diff)
	}
	if f := r.Findings[1]; !f.Redacted || !f.Differs {
		t.Errorf("password finding: Redacted %v, Differs %v; want both true", f.Redacted, f.Differs)
	}
	for name, write := range map[string]func(*bytes.Buffer) error{
		"json": func(b *bytes.Buffer) error { return r.WriteJSON(b) }, "text": func(b *bytes.Buffer) error { return r.WriteText(b) },
		"markdown": func(b *bytes.Buffer) error { return r.WriteMarkdown(b) },
	} {
		var b bytes.Buffer
		if err := write(&b); err != nil {
			t.Fatal(err)
		}
		if strings.Contains(b.String(), "hunter2") || strings.Contains(b.String(), "s3cret") {
			t.Errorf("%s report prints a sensitive value:\n%s", name, b.String())
		}
		if !strings.Contains(b.String(), ".data.password") {
			t.Errorf("%s report does not name the sensitive field:\n%s", name, b.String())
		}
	}
	if s := r.Findings[1].Sentence(); strings.Contains(s, "s3cret") || strings.Contains(s, "hunter2") {
		t.Errorf("sentence prints a sensitive value: %s", s)
	}
}

// TestYieldPolicyServer: a field the conflict policy yields to the manager
// that took it is Yielded (information), the same take-over by anyone
// else is drift.
func TestYieldPolicyServer(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "app", Namespace: ns}, settings)
	c.applyPlan(t, plan, false)
	c.mergePatch(t, plan.Objects[0].Desired, "operator", `{"data":{"color":"green"}}`)
	live := c.live(t, plan)

	tests := map[string]struct {
		policy YieldPolicy
		want   []found
		drift  bool
	}{
		"yielded to the taker":    {yieldTo("operator"), []found{{Object: "ConfigMap/settings", Path: ".data.color", Class: "yielded", Culprit: "operator", Operation: "Update", Desired: "blue", Live: "green"}}, false},
		"yielded to someone else": {yieldTo("hpa"), []found{{Object: "ConfigMap/settings", Path: ".data.color", Class: "taken-over", Culprit: "operator", Operation: "Update", Desired: "blue", Live: "green"}}, true},
		"no policy":               {nil, []found{{Object: "ConfigMap/settings", Path: ".data.color", Class: "taken-over", Culprit: "operator", Operation: "Update", Desired: "blue", Live: "green"}}, true},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			r := Detect(plan, live, Options{Yield: tc.policy})
			if diff := cmp.Diff(tc.want, summarize(r)); diff != "" {
				t.Errorf("findings (-want +got):\n%s", diff)
			}
			if r.HasDrift() != tc.drift {
				t.Errorf("HasDrift = %v, want %v", r.HasDrift(), tc.drift)
			}
		})
	}
}
