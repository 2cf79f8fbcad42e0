package inventory

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/planner"
)

// TestUnchangedFromCache checks the applier's cache-only skip: true for a
// member as syncd left it (also after another manager wrote a field syncd
// does not declare), false once someone else changed a field of syncd's or
// Git changed it, and false without a watch.
func TestUnchangedFromCache(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	ctx := context.Background()
	plan := f.plan(f.cms("a", "b")...)
	f.converge(t, plan)

	run, err := f.m.Begin(ctx, invApp(f.app), plan, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range plan.Objects {
		obj := &plan.Objects[i]
		if rv, ok := run.Unchanged(ctx, obj); !ok || rv == "" {
			t.Errorf("%s: Unchanged = %q, %v right after a sync; want its resourceVersion, true", obj.Ref, rv, ok)
		}
	}

	// Git changes b: its slice hash no longer matches.
	changed := f.plan(f.cm("a"), "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: b}\ndata: {k: new}\n")
	run2, err := f.m.Begin(ctx, invApp(f.app), changed, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := run2.Unchanged(ctx, &changed.Objects[1]); ok {
		t.Errorf("%s: Unchanged after its manifest changed", changed.Objects[1].Ref)
	}

	// Someone else adds a key syncd does not declare: syncd's fields are
	// as it left them, so a is still skipped once the cache has seen the
	// write. Then someone else changes a key syncd declares (the Update
	// takes the field from syncd's manager): a is not skipped.
	a := &plan.Objects[0]
	f.editCached(t, run, a, "other", "edit")
	if _, ok := run.Unchanged(ctx, a); !ok {
		t.Errorf("%s: not Unchanged after another manager wrote a field syncd does not declare", a.Ref)
	}
	f.editCached(t, run, a, "k", "edit")
	if _, ok := run.Unchanged(ctx, a); ok {
		t.Errorf("%s: Unchanged after another manager changed a field syncd declares", a.Ref)
	}

	nw := newFixture(t, config.App{}, Options{NoWatch: true})
	nwPlan := nw.plan(nw.cm("a"))
	nw.mustSync(nwPlan)
	nwRun, err := nw.m.Begin(ctx, invApp(nw.app), nwPlan, false)
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := nwRun.Unchanged(ctx, &nwPlan.Objects[0]); ok {
		t.Errorf("Unchanged answered without a watch")
	}
}

// editCached sets data[key] of ConfigMap obj as another manager and waits
// until run's watch cache has seen the write.
func (f *fixture) editCached(t *testing.T, run *Run, obj *planner.Object, key, value string) {
	t.Helper()
	ctx := context.Background()
	cms := env.Clientset(t).CoreV1().ConfigMaps(f.ns)
	cm, err := cms.Get(ctx, obj.Ref.Name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = value
	edited, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		wk, _, err := run.resource(obj.Ref)
		if err != nil {
			return false, err
		}
		pom, ok := f.m.tracker.get(wk, obj.Ref.Name)
		return ok && pom.ResourceVersion == edited.ResourceVersion, nil
	})
	if err != nil {
		t.Fatalf("watch cache never saw the edit: %v", err)
	}
}
