package inventory

import (
	"context"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/config"
)

// TestUnchangedFromCache checks the applier's cache-only skip: true for a
// member exactly as syncd left it, false once someone else changed it or
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

	// Someone else edits a: once the cache has seen it, a is not skipped.
	cs := env.Clientset(t)
	cm, err := cs.CoreV1().ConfigMaps(f.ns).Get(ctx, "a", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data["other"] = "edit"
	edited, err := cs.CoreV1().ConfigMaps(f.ns).Update(ctx, cm, metav1.UpdateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	a := &plan.Objects[0]
	err = wait.PollUntilContextTimeout(ctx, 50*time.Millisecond, time.Minute, true, func(context.Context) (bool, error) {
		wk, _, err := run.resource(a.Ref)
		if err != nil {
			return false, err
		}
		pom, ok := f.m.tracker.get(wk, "a")
		return ok && pom.ResourceVersion == edited.ResourceVersion, nil
	})
	if err != nil {
		t.Fatalf("watch cache never saw the edit: %v", err)
	}
	if _, ok := run.Unchanged(ctx, a); ok {
		t.Errorf("%s: Unchanged after another manager edited it", a.Ref)
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
