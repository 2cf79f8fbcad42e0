package drift

import (
	"context"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

const memberLabel = "applyset.kubernetes.io/part-of"

// applyLabelled applies every slice of plan as its manager with the member
// label added, the way the inventory's apply hook does, and returns the
// resourceVersion each object was left at.
func (c *cluster) applyLabelled(t testing.TB, plan *planner.Plan, id string, force bool) map[planner.ObjectRef]string {
	t.Helper()
	rvs := map[planner.ObjectRef]string{}
	for _, o := range plan.Objects {
		for _, s := range o.Slices {
			u := s.Object.DeepCopy()
			l := u.GetLabels()
			if l == nil {
				l = map[string]string{}
			}
			l[memberLabel] = id
			u.SetLabels(l)
			c.apply(t, u, string(s.Manager), force)
		}
		live, err := c.resource(t, o.Desired).Get(context.Background(), o.Ref.Name, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		rvs[o.Ref] = live.GetResourceVersion()
	}
	return rvs
}

// startWatcherWith runs a Watcher with opts (OnChange and OnError are set
// here) on plan until the test ends.
func startWatcherWith(t testing.TB, c *cluster, plan *planner.Plan, opts Options, wo WatcherOptions) (*Watcher, *recorder) {
	t.Helper()
	rec := newRecorder()
	wo.OnChange = rec.record
	wo.OnError = func(err error) { t.Log(err) }
	return runWatcher(t, c, plan, opts, wo), rec
}

// waitState polls the watcher's state under its lock until cond holds.
func waitState(t testing.TB, w *Watcher, what string, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for {
		w.mu.Lock()
		ok := cond()
		w.mu.Unlock()
		if ok {
			return
		}
		if time.Now().After(deadline) {
			t.Fatalf("watcher never reached: %s", what)
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// settled reports whether every informer synced and nothing waits to be
// recomputed or debounced. w.mu is held.
func settled(w *Watcher) bool {
	if len(w.groups) == 0 || len(w.dirty) > 0 || len(w.armed) > 0 {
		return false
	}
	for _, g := range w.groups {
		if !g.synced {
			return false
		}
	}
	return true
}

// cached returns the names in the watcher's informer caches. w.mu is held.
func cached(w *Watcher) []string {
	var out []string
	for _, g := range w.groups {
		for _, o := range g.informer.List() {
			out = append(out, o.GetName())
		}
	}
	sort.Strings(out)
	return out
}

// TestWatcherLabelSelector: with a LabelSelector the watcher caches only
// the members of its app, not the other ConfigMaps of a shared namespace;
// drift is still found; a member whose label is removed is reported as
// that label taken over (not as deleted) and resolved when relabelled; a
// deleted member is still reported deleted.
func TestWatcherLabelSelector(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	plan := seedPlan(t, ns)
	c.applyLabelled(t, plan, "mine", false)
	for i := range 5 {
		c.apply(t, obj(t, fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: other-%d, namespace: %s, labels: {%s: theirs}}, data: {k: v}}`, i, ns, memberLabel)), "other-app", false)
	}
	w, rec := startWatcherWith(t, c, plan, Options{}, WatcherOptions{LabelSelector: memberLabel + "=mine"})
	waitState(t, w, "informers synced", func() bool { return settled(w) })
	w.mu.Lock()
	got := cached(w)
	w.mu.Unlock()
	if diff := cmp.Diff([]string{"quiet", "seed"}, got); diff != "" {
		t.Errorf("objects cached by the watcher (-want +got):\n%s", diff)
	}

	seed, quiet := plan.Objects[1].Desired, plan.Objects[0].Desired
	c.mergePatch(t, seed, "operator", `{"data":{"color":"green"}}`)
	i := rec.waitFor(t, 0, 30*time.Second, "a taken-over .data.color", func(ch Delta) bool {
		return hasFinding(ch.New, ".data.color", TakenOver, "operator")
	})

	labelPath := ".metadata.labels." + memberLabel
	c.mergePatch(t, quiet, "kubectl-label", `{"metadata":{"labels":{"`+memberLabel+`":null}}}`)
	i = rec.waitFor(t, i+1, 30*time.Second, "the member label taken over", func(ch Delta) bool {
		return ch.Object.Name == "quiet" && hasFinding(ch.New, labelPath, TakenOver, "")
	})
	for _, f := range w.Report().Findings {
		if f.Class == Deleted {
			t.Errorf("an unlabelled member is reported deleted: %+v", f)
		}
		if f.Path == labelPath && (f.Desired != "mine" || f.Live != nil) {
			t.Errorf("label finding: desired %v live %v, want mine and absent", f.Desired, f.Live)
		}
	}

	c.applyLabelled(t, plan, "mine", true) // syncd labels it again (and takes .data.color back)
	i = rec.waitFor(t, i+1, 30*time.Second, "the label finding resolved", func(ch Delta) bool {
		return hasFinding(ch.Resolved, labelPath, TakenOver, "")
	})
	waitState(t, w, "no findings after syncd applied again", func() bool { return settled(w) && len(w.current) == 0 })

	if err := c.resource(t, seed).Delete(context.Background(), "seed", deleteNow); err != nil {
		t.Fatal(err)
	}
	rec.waitFor(t, i+1, 30*time.Second, "a deleted finding", func(ch Delta) bool {
		return ch.Object.Name == "seed" && hasFinding(ch.New, "", Deleted, "")
	})
}

// TestWatcherPause: syncd applies a new value (blue → teal) while the
// watcher still has the previous plan. Paused, the watcher does not judge
// the apply's event against the old plan ("Git says blue"); SetPlan with
// the new plan then re-evaluates from the cache and publishes nothing. A
// take-over that the new revision makes moot is resolved by SetPlan, and
// the resolution carries the new revision.
func TestWatcherPause(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	app := config.App{Name: "app", Namespace: ns}
	cm := func(rev, color, size string) *planner.Plan {
		p := mustPlan(t, app, fmt.Sprintf("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seed}\ndata: {color: %s, size: %s}\n", color, size))
		p.Revision = rev
		return p
	}
	v1 := cm("v1", "blue", "s")
	c.applyPlan(t, v1, false)
	w, rec := startWatcherWith(t, c, v1, Options{}, WatcherOptions{Debounce: time.Millisecond})
	waitState(t, w, "informers synced", func() bool { return settled(w) })
	k := keyOf(v1.Objects[0].Ref)
	liveRV := func() string {
		live, err := c.resource(t, v1.Objects[0].Desired).Get(context.Background(), "seed", metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		return live.GetResourceVersion()
	}
	// inCache waits until the watcher's cache holds rv and the event's
	// debounce has fired (the object waits, dirty, for the pause to end).
	inCache := func(rv string) {
		t.Helper()
		waitState(t, w, "the apply's event seen and debounced", func() bool {
			wo := w.objects[k]
			o, ok := w.groups[wo.group].informer.Get(wo.group.namespace, wo.decl.ref.Name)
			seen := ok && o.GetResourceVersion() == rv
			return seen && (w.dirty[k] && !w.armed[k] || rec.len() > 0) // published: checked below
		})
	}

	// Git moves to teal; syncd applies it while the watcher is paused.
	w.Pause()
	v2 := cm("v2", "teal", "s")
	c.applyPlan(t, v2, false)
	rv := liveRV()
	inCache(rv)
	w.Applied(map[planner.ObjectRef]string{v2.Objects[0].Ref: rv})
	if err := w.SetPlan(v2, Options{}); err != nil {
		t.Fatal(err)
	}
	waitState(t, w, "re-evaluated after SetPlan", func() bool { return settled(w) })
	if n := rec.len(); n != 0 {
		t.Fatalf("syncd's own apply published %d change(s), want none: %+v", n, rec.changes)
	}

	// Someone sets size to m out of band; then Git moves size to l and
	// syncd applies it, forcing: the take-over resolves at the new
	// revision, and l is not judged against v2's s.
	c.mergePatch(t, v2.Objects[0].Desired, "operator", `{"data":{"size":"m"}}`)
	i := rec.waitFor(t, 0, 30*time.Second, "a taken-over .data.size", func(ch Delta) bool {
		return hasFinding(ch.New, ".data.size", TakenOver, "operator")
	})
	w.Pause()
	v3 := cm("v3", "teal", "l")
	c.applyPlan(t, v3, true)
	rv = liveRV()
	inCache(rv)
	w.Applied(map[planner.ObjectRef]string{v3.Objects[0].Ref: rv})
	if err := w.SetPlan(v3, Options{}); err != nil {
		t.Fatal(err)
	}
	j := rec.waitFor(t, i+1, 30*time.Second, "the take-over resolved", func(ch Delta) bool {
		return hasFinding(ch.Resolved, ".data.size", TakenOver, "operator")
	})
	waitState(t, w, "re-evaluated after SetPlan", func() bool { return settled(w) })
	rec.mu.Lock()
	defer rec.mu.Unlock()
	if got := rec.changes[j].Revision; got != "v3" {
		t.Errorf("resolution computed against revision %q, want v3", got)
	}
	for _, ch := range rec.changes[i+1:] {
		if len(ch.New) > 0 {
			t.Errorf("new findings while syncd applied v3: %+v", ch.New)
		}
	}
	if len(w.Report().Findings) != 0 {
		t.Errorf("findings left: %+v", w.Report().Findings)
	}
}

// TestWatcherAppliedWaitsForWatch: when syncd's apply is newer than the
// watcher's cache, the object is not judged on the older cached copy; it is
// recomputed when the watch delivers the apply. The watch lag is made
// certain by announcing a resourceVersion the next write will reach.
func TestWatcherAppliedWaitsForWatch(t *testing.T) {
	c := newCluster(t)
	ns := env.Namespace(t)
	app := config.App{Name: "app", Namespace: ns}
	v1 := mustPlan(t, app, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seed}\ndata: {color: blue}\n")
	c.applyPlan(t, v1, false)
	w, rec := startWatcherWith(t, c, v1, Options{}, WatcherOptions{Debounce: time.Millisecond})
	waitState(t, w, "informers synced", func() bool { return settled(w) })
	live, err := c.resource(t, v1.Objects[0].Desired).Get(context.Background(), "seed", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	// The plan moves to teal and syncd "has applied" a version newer than
	// the cache (blue): the watcher must wait instead of reporting blue.
	v2 := mustPlan(t, app, "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: seed}\ndata: {color: teal}\n")
	w.Pause()
	w.Applied(map[planner.ObjectRef]string{v2.Objects[0].Ref: bump(t, live.GetResourceVersion())})
	if err := w.SetPlan(v2, Options{}); err != nil {
		t.Fatal(err)
	}
	k := keyOf(v2.Objects[0].Ref)
	cycle(t, w)
	waitState(t, w, "the stale copy skipped", func() bool { return w.dirty[k] && w.expect[k] != "" || rec.len() > 0 })
	if n := rec.len(); n != 0 {
		t.Fatalf("published %d change(s) from a copy older than the apply: %+v", n, rec.changes)
	}
	c.applyPlan(t, v2, false) // the write arrives: a newer resourceVersion
	waitState(t, w, "recomputed", func() bool { return settled(w) && len(w.expect) == 0 })
	if n := rec.len(); n != 0 {
		t.Fatalf("published %d change(s), want none: %+v", n, rec.changes)
	}
}

// bump returns the resourceVersion after rv.
func bump(t testing.TB, rv string) string {
	t.Helper()
	n, err := parseRV(rv)
	if err != nil {
		t.Fatalf("resourceVersion %q is not a number", rv)
	}
	return fmt.Sprint(n + 1)
}

// cycle returns once the watcher's loop has run process at least once
// after the call: it pokes twice and waits each time for the loop to take
// the signal, which it only does between two runs of process.
func cycle(t testing.TB, w *Watcher) {
	t.Helper()
	for range 2 {
		w.poke()
		deadline := time.Now().Add(30 * time.Second)
		for len(w.signal) > 0 {
			if time.Now().After(deadline) {
				t.Fatal("the watcher loop does not run")
			}
			time.Sleep(5 * time.Millisecond)
		}
	}
}
