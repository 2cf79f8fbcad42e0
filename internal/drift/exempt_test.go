package drift

import (
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/directive"
)

// TestExemptObjects: an object Git marks reconcile: disabled or ssa:
// Ignore (syncd's or Flux's spelling) has no finding, neither for a value
// another writer changed nor when it is missing; ssa: IfNotPresent has
// none for a changed value (it is never updated) but its deletion is
// still reported (it would be created again). Against the API server.
func TestExemptObjects(t *testing.T) {
	tests := map[string]struct {
		key, value  string
		wantDeleted bool
	}{
		"syncd reconcile disabled": {key: directive.SyncdReconcile, value: "disabled"},
		"flux reconcile disabled":  {key: directive.FluxReconcile, value: "disabled"},
		"syncd ssa Ignore":         {key: directive.SyncdSSA, value: "Ignore"},
		"flux ssa Ignore":          {key: directive.FluxSSA, value: "Ignore"},
		"syncd ssa IfNotPresent":   {key: directive.SyncdSSA, value: "IfNotPresent", wantDeleted: true},
		"flux ssa IfNotPresent":    {key: directive.FluxSSA, value: "IfNotPresent", wantDeleted: true},
	}
	c := newCluster(t)
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			ns := env.Namespace(t)
			app := config.App{Name: "app", Namespace: ns}
			applied := mustPlan(t, app, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {color: blue}\n")
			c.applyPlan(t, applied, false)
			c.mergePatch(t, applied.Objects[0].Desired, "operator", `{"data":{"color":"green"}}`)
			if r := Detect(applied, c.live(t, applied), Options{}); len(r.Findings) == 0 {
				t.Fatal("no finding before the annotation: the test proves nothing")
			}
			marked := mustPlan(t, app, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm, annotations: {%q: %q}}\ndata: {color: blue}\n", tc.key, tc.value))
			if r := Detect(marked, c.live(t, marked), Options{}); len(r.Findings) != 0 {
				t.Errorf("findings of an object Git marks %s: %s: %v", tc.key, tc.value, r.Findings)
			}
			var classes []Class
			for _, f := range Detect(marked, nil, Options{}).Findings {
				classes = append(classes, f.Class)
			}
			var want []Class
			if tc.wantDeleted {
				want = []Class{Deleted}
			}
			if diff := cmp.Diff(want, classes); diff != "" {
				t.Errorf("findings of the missing object (-want +got):\n%s", diff)
			}
		})
	}
}

// TestExemptLive: reconcile: disabled written on the live object only
// silences its drift too, as the applier leaves it alone.
func TestExemptLive(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := mustPlan(t, config.App{Name: "app", Namespace: ns}, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: cm}\ndata: {color: blue}\n")
	c.applyPlan(t, plan, false)
	c.mergePatch(t, plan.Objects[0].Desired, "kubectl", fmt.Sprintf(`{"metadata":{"annotations":{%q:"disabled"}},"data":{"color":"green"}}`, directive.FluxReconcile))
	if r := Detect(plan, c.live(t, plan), Options{}); len(r.Findings) != 0 {
		t.Errorf("findings of an object disabled in the cluster: %v", r.Findings)
	}
}
