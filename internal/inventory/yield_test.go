package inventory

import (
	"context"
	"fmt"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// TestYieldedObjectIsLeftAlone: an object whose apply yielded a field to
// another manager (conflict policy yield) is recorded as applied, with
// what that manager holds; the next sync sends nothing for it, also when
// the manager writes the field again. Once the manager lets the field go,
// the sync after sets Git's value again; and a yield recorded under
// another policy is decided again by the policy in force (yield changed
// to force takes the field). With and without the watch cache (the
// daemon, a one-shot syncd apply).
func TestYieldedObjectIsLeftAlone(t *testing.T) {
	for _, noWatch := range []bool{false, true} {
		t.Run(fmt.Sprintf("no watch %v", noWatch), func(t *testing.T) {
			f := newFixture(t, config.App{}, Options{NoWatch: noWatch})
			plan := f.plan(f.cm("a"))
			f.mustSync(plan)

			f.app.Conflicts.Default = config.ActionYield
			f.settled(t, "a", f.setData(t, "a", "k", "theirs"), noWatch)
			if got := f.syncAction(t, plan); got != applier.Yielded {
				t.Fatalf("sync after someone else took .data.k: %s, want yielded", got)
			}
			f.wantData(t, "a", "theirs")
			mem := f.member(t, "a")
			if len(mem.Slices) != 1 || mem.Slices[0].Yield == nil || len(mem.Slices[0].Yield.To) != 1 || mem.Slices[0].Yield.To[0].Manager != "someone-else" {
				t.Fatalf("member after the yield: %+v, want its slice recorded with what someone-else holds", mem)
			}

			f.count.reset()
			f.count.on.Store(true)
			if got := f.syncAction(t, plan); got != applier.Unchanged {
				t.Errorf("sync with nothing changed after the yield: %s, want unchanged", got)
			}
			f.count.on.Store(false)
			if w := f.count.writes.Load(); w != 0 {
				t.Errorf("sync with nothing changed sent %d writes, want none: %v", w, f.count.lines)
			}

			f.settled(t, "a", f.setData(t, "a", "k", "theirs-again"), noWatch)
			if got := f.syncAction(t, plan); got != applier.Unchanged {
				t.Errorf("sync after the holder wrote its field again: %s, want unchanged", got)
			}
			f.wantData(t, "a", "theirs-again")

			f.settled(t, "a", f.dropData(t, "a", "k"), noWatch)
			if got := f.syncAction(t, plan); got != applier.Configured {
				t.Errorf("sync after the holder let .data.k go: %s, want configured", got)
			}
			f.wantData(t, "a", "a")
			if mem := f.member(t, "a"); len(mem.Slices) != 1 || mem.Slices[0].Yield != nil {
				t.Errorf("member after syncd took the field back: %+v, want nothing yielded", mem)
			}

			f.settled(t, "a", f.setData(t, "a", "k", "theirs-once-more"), noWatch)
			if got := f.syncAction(t, plan); got != applier.Yielded {
				t.Fatalf("sync after someone else took .data.k again: %s, want yielded", got)
			}
			f.app.Conflicts.Default = config.ActionForce
			if got := f.syncAction(t, plan); got != applier.Forced {
				t.Errorf("sync after the policy changed from yield to force: %s, want forced", got)
			}
			f.wantData(t, "a", "a")
		})
	}
}

// syncAction syncs plan, which must hold one object of one slice, and
// returns its action.
func (f *fixture) syncAction(t *testing.T, plan *planner.Plan) applier.Action {
	t.Helper()
	cs, _, err := f.sync(context.Background(), plan)
	if err != nil {
		t.Fatalf("sync: %v", err)
	}
	if len(cs.Changes) != 1 {
		t.Fatalf("sync: %d changes, want 1", len(cs.Changes))
	}
	return cs.Changes[0].Action
}

// settled waits, with a watch, until the watch cache has seen
// resourceVersion rv of ConfigMap name.
func (f *fixture) settled(t *testing.T, name, rv string, noWatch bool) {
	t.Helper()
	if !noWatch {
		f.waitCached(t, name, rv)
	}
}

// dropData removes data[key] of ConfigMap name as another manager (an
// Update, which lets its field go) and returns the new resourceVersion.
func (f *fixture) dropData(t *testing.T, name, key string) string {
	t.Helper()
	ctx := context.Background()
	cms := env.Clientset(t).CoreV1().ConfigMaps(f.ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	delete(cm.Data, key)
	edited, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	return edited.ResourceVersion
}

// wantData fails unless ConfigMap name's data.k is want.
func (f *fixture) wantData(t *testing.T, name, want string) {
	t.Helper()
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(f.ns).Get(context.Background(), name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := cm.Data["k"]; got != want {
		t.Errorf("%s: data.k = %q, want %q", name, got, want)
	}
}

// member returns the inventory's record of member name.
func (f *fixture) member(t *testing.T, name string) *Member {
	t.Helper()
	inv, err := f.m.Load(context.Background(), f.app.Name)
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range inv.Members {
		if m.Name == name {
			return m
		}
	}
	t.Fatalf("%s: not a member", name)
	return nil
}
