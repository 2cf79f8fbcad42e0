package e2e

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/testenv/gitserver"
)

// TestJourneyYieldLeftAlone: under `syncd run`, an app whose conflict
// policy yields leaves a field an operator took to the operator once, and
// then leaves the object alone: polls of the same revision yield nothing
// more (syncd_conflicts_total{outcome="yield"} stays), and `syncd tree`
// shows the object applied with the field yielded to the operator. When
// the operator lets the field go, the next poll sets Git's value again.
func TestJourneyYieldLeftAlone(t *testing.T) {
	const ns = "yield-e2e"
	w := newWorkspace(t)
	ensureNamespace(t, ns)
	srv := gitserver.StartTest(t)
	repo := srv.NewTestRepo(t, "yield")
	if _, err := repo.Commit("app", map[string][]byte{
		"app/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: settings, namespace: " + ns + "}\ndata: {color: blue, size: m}\n"),
	}); err != nil {
		t.Fatal(err)
	}
	w.writeConfig(fmt.Sprintf(`apiVersion: syncd/v1alpha1
kind: Config
sources:
  - name: yield
    git: {url: %s, branch: main, interval: 1s}
apps:
  - name: yield
    source: yield
    path: app
    conflicts: {default: yield}
`, repo.URL))
	d := w.startDaemon()
	d.waitApplied("yield", func(rev string) bool { return rev != "" })

	cms := clientset(t).CoreV1().ConfigMaps(ns)
	patch := []byte(`{"data":{"color":"red"}}`)
	if _, err := cms.Patch(context.Background(), "settings", types.MergePatchType, patch, metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	yields := func() float64 {
		return value(scrape(t, d.addr), "syncd_conflicts_total", map[string]string{"app": "yield", "outcome": "yield"})
	}
	waitFor(t, "the operator's field yielded", time.Minute, func() (bool, string) {
		return yields() == 1, tail(d.logText(), 3000)
	})
	r := w.must(0, "tree", "app", "yield", "--config", w.config)
	if l := lineWith(r.stdout, ns+"/settings"); !strings.Contains(l, "applied, fields yielded to operator") {
		t.Errorf("tree after the yield: settings line %q, want it applied with fields yielded to operator\n%s", l, r.stdout)
	}

	// Several polls of the same revision (interval 1s): nothing is
	// applied again, so nothing is yielded again.
	runs := d.waitRuns("yield", 3)
	if got := yields(); got != 1 {
		t.Errorf("after %d more runs of the same revision: %v yields, want 1 (the object left alone)", runs, got)
	}
	if cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{}); err != nil || cm.Data["color"] != "red" {
		t.Fatalf("the operator's value: %v, %v; want red", cm.Data, err)
	}

	// The operator lets the field go: the next poll takes it back.
	remove := []byte(`[{"op":"remove","path":"/data/color"}]`)
	if _, err := cms.Patch(context.Background(), "settings", types.JSONPatchType, remove, metav1.PatchOptions{FieldManager: "operator"}); err != nil {
		t.Fatal(err)
	}
	waitFor(t, "Git's value back once the operator let the field go", time.Minute, func() (bool, string) {
		cm, err := cms.Get(context.Background(), "settings", metav1.GetOptions{})
		if err != nil {
			return false, err.Error()
		}
		return cm.Data["color"] == "blue", fmt.Sprintf("%v\n%s", cm.Data, tail(d.logText(), 3000))
	})
	r = w.must(0, "tree", "app", "yield", "--config", w.config)
	if l := lineWith(r.stdout, ns+"/settings"); strings.Contains(l, "yielded") || !strings.Contains(l, "applied") {
		t.Errorf("tree after syncd took the field back: settings line %q, want applied, nothing yielded", l)
	}
}
