package drift

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// TestInheritPublishesFromWhatWasPublished: a watcher that replaces
// another (Inherit) publishes the change from the old one's findings:
// a drift taken back meanwhile is Resolved, one that remains is not New
// again, and one of an object its plan no longer has is Resolved. The
// old watcher publishes nothing once it handed its findings over.
func TestInheritPublishesFromWhatWasPublished(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	app := config.App{Name: "app", Namespace: ns}
	doc := func(name string) string {
		return fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: %s}\ndata: {color: blue}\n", name)
	}
	all := mustPlan(t, app, doc("taken-back"), doc("kept"), doc("dropped"))
	c.applyPlan(t, all, false)
	old, oldRec := startWatcherWith(t, c, all, Options{}, WatcherOptions{Debounce: time.Millisecond})
	waitState(t, old, "informers synced", func() bool { return settled(old) })
	for _, o := range all.Objects {
		c.mergePatch(t, o.Slices[0].Object, "kubectl-edit", `{"data":{"color":"red"}}`)
	}
	waitState(t, old, "the three edits found", func() bool { return len(old.current) == 3 })

	w, rec := newInheritor(t, c)
	w.Inherit(old)
	if got := len(w.Report().Findings); got != 3 {
		t.Errorf("the inheritor reports %d finding(s) before its first plan, want the 3 inherited", got)
	}
	c.applyPlan(t, mustPlan(t, app, doc("taken-back")), true)
	before := oldRec.len()
	if err := old.SetPlan(all, Options{Managers: []planner.FieldManager{"syncd-other"}}); err != nil {
		t.Fatal(err)
	}
	cycle(t, old)
	if n := oldRec.len() - before; n != 0 {
		t.Errorf("the old watcher published %d change(s) after handing its findings over", n)
	}

	if err := w.SetPlan(mustPlan(t, app, doc("taken-back"), doc("kept")), Options{}); err != nil {
		t.Fatal(err)
	}
	runUntilCleanup(t, w)
	waitState(t, w, "the inherited findings judged", func() bool { return settled(w) && len(w.asking) == 0 })
	type change struct {
		Object        string
		New, Resolved []string
	}
	var got []change
	rec.mu.Lock()
	for _, d := range rec.changes {
		ch := change{Object: d.Object.Name}
		for _, f := range d.New {
			ch.New = append(ch.New, f.Path+" "+string(f.Class))
		}
		for _, f := range d.Resolved {
			ch.Resolved = append(ch.Resolved, f.Path+" "+string(f.Class))
		}
		got = append(got, ch)
	}
	rec.mu.Unlock()
	want := []change{
		{Object: "dropped", Resolved: []string{".data.color " + string(TakenOver)}},
		{Object: "taken-back", Resolved: []string{".data.color " + string(TakenOver)}},
	}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("changes published by the inheritor (-want +got):\n%s", diff)
	}
}

// newInheritor returns a watcher with no plan yet and its recorder.
func newInheritor(t *testing.T, c *cluster) (*Watcher, *recorder) {
	t.Helper()
	rec := newRecorder()
	w, err := NewWatcher(c.dyn, c.mapper, WatcherOptions{Debounce: time.Millisecond, OnChange: rec.record, OnError: func(err error) { t.Log(err) }})
	if err != nil {
		t.Fatal(err)
	}
	return w, rec
}

// runUntilCleanup runs w until the test ends.
func runUntilCleanup(t *testing.T, w *Watcher) {
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() {
		defer close(done)
		_ = w.Run(ctx)
	}()
	t.Cleanup(func() {
		cancel()
		<-done
	})
}
