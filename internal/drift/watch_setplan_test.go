package drift

import (
	"fmt"
	"testing"
	"time"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// TestSetPlanRecomputesOnlyWhatChanged: a new plan recomputes only the
// objects whose findings may have changed. A fresh render of the same
// objects at a new revision, after a no-op sync that reports the versions
// it found (Applied), recomputes none of them; Git changing one object's
// value (not applied yet) recomputes that one, which reports the
// value-drift; other managers (new rules) recompute every object; an
// object with a finding is recomputed by every plan; and an out-of-band
// edit made while the watcher is paused (a sync that applied nothing,
// Resume) is judged against the plan the watcher kept, whose rendered
// objects it no longer holds.
func TestSetPlanRecomputesOnlyWhatChanged(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	app := config.App{Name: "app", Namespace: ns}
	render := func(rev, bColor string) *planner.Plan {
		var docs []string
		for _, n := range []string{"a", "b", "c"} {
			color := "blue"
			if n == "b" {
				color = bColor
			}
			docs = append(docs, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {color: %s}\n", n, color))
		}
		p := mustPlan(t, app, docs...)
		p.Revision = rev
		return p
	}
	v1 := render("v1", "blue")
	c.applyPlan(t, v1, false)
	w, rec := startWatcherWith(t, c, v1, Options{}, WatcherOptions{Debounce: time.Millisecond})
	waitState(t, w, "informers synced", func() bool { return settled(w) })
	judged := func() int {
		w.mu.Lock()
		defer w.mu.Unlock()
		return w.judgements
	}
	// setPlan sets p and returns how many objects it recomputed.
	setPlan := func(p *planner.Plan, opts Options) int {
		t.Helper()
		before := judged()
		if err := w.SetPlan(p, opts); err != nil {
			t.Fatal(err)
		}
		cycle(t, w)
		waitState(t, w, "re-evaluated after SetPlan", func() bool { return settled(w) && len(w.asking) == 0 })
		return judged() - before
	}

	// A no-op sync reports the versions it found (the cached ones).
	versions := map[planner.ObjectRef]string{}
	for r, o := range c.live(t, v1) {
		versions[r] = o.GetResourceVersion()
	}
	w.Applied(versions)
	if n := setPlan(render("v2", "blue"), Options{}); n != 0 {
		t.Errorf("the same objects at a new revision: %d recomputed, want 0", n)
	}
	waitState(t, w, "the applied versions seen", func() bool { return len(w.expect) == 0 })
	if n := rec.len(); n != 0 {
		t.Fatalf("published %d change(s), want none: %+v", n, rec.changes)
	}
	if n := setPlan(render("v3", "teal"), Options{}); n != 1 {
		t.Errorf("one object changed in Git: %d recomputed, want 1", n)
	}
	i := rec.waitFor(t, 0, 30*time.Second, "the value-drift of b", func(ch Delta) bool {
		return ch.Object.Name == "b" && hasFinding(ch.New, ".data.color", ValueDrift, "")
	})
	more := Options{Managers: []planner.FieldManager{"syncd-other"}}
	if n := setPlan(render("v4", "teal"), more); n != 3 {
		t.Errorf("other managers: %d recomputed, want 3", n)
	}
	if n := setPlan(render("v5", "teal"), more); n != 1 {
		t.Errorf("nothing changed, b has a finding: %d recomputed, want 1 (b)", n)
	}

	// A sync that applies nothing: the watcher is paused, someone edits a
	// meanwhile, and Resume judges it against the plan kept (blue).
	w.Pause()
	c.mergePatch(t, v1.Objects[0].Desired, "operator", `{"data":{"color":"green"}}`)
	w.Resume()
	rec.waitFor(t, i+1, 30*time.Second, "a's take-over after Resume", func(ch Delta) bool {
		return ch.Object.Name == "a" && ch.Revision == "v5" && hasFinding(ch.New, ".data.color", TakenOver, "operator")
	})
}
