package inventory

import (
	"context"
	"fmt"
	"testing"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"

	"syncd.dev/syncd/internal/config"
	"syncd.dev/syncd/internal/directive"
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
	f.editCached(t, a, "other", "edit")
	if _, ok := run.Unchanged(ctx, a); !ok {
		t.Errorf("%s: not Unchanged after another manager wrote a field syncd does not declare", a.Ref)
	}
	f.editCached(t, a, "k", "edit")
	if _, ok := run.Unchanged(ctx, a); ok {
		t.Errorf("%s: Unchanged after another manager changed a field syncd declares", a.Ref)
	}

	// Someone else writes reconcile: disabled on b (kubectl annotate):
	// syncd's entries are as it left them, but the applier must read b to
	// exclude it.
	b := &plan.Objects[1]
	rv := f.annotate(t, b.Ref.Name, directive.SyncdReconcile, directive.Disabled)
	f.waitCached(t, b.Ref.Name, rv)
	if _, ok := run.Unchanged(ctx, b); ok {
		t.Errorf("%s: Unchanged with reconcile: disabled written on the live object", b.Ref)
	}
}

// TestUnchangedFromBegin checks the skip of a run without a watch cache
// (a one-shot syncd apply): Unchanged answers from the metadata Begin
// listed or read, keeping only the resourceVersion of the objects as
// syncd left them, and is false (Begin keeping their metadata for the
// applier's read) for objects someone else changed or marked to be left
// alone in the cluster.
func TestUnchangedFromBegin(t *testing.T) {
	tests := map[string]struct {
		// prefix starts the names of the case's ConfigMaps.
		prefix string
		// edit changes ConfigMap name after the sync, as someone else.
		edit      func(f *fixture, t *testing.T, name string)
		unchanged bool
	}{
		"as syncd left it": {prefix: "same", edit: func(*fixture, *testing.T, string) {}, unchanged: true},
		"another manager wrote a field syncd does not declare": {
			prefix:    "other-field",
			edit:      func(f *fixture, t *testing.T, name string) { f.setData(t, name, "other", "edit") },
			unchanged: true,
		},
		"another manager changed a field syncd declares": {
			prefix: "taken",
			edit:   func(f *fixture, t *testing.T, name string) { f.setData(t, name, "k", "edit") },
		},
		"reconcile: disabled written on the live object": {
			prefix: "disabled",
			edit: func(f *fixture, t *testing.T, name string) {
				f.annotate(t, name, directive.FluxReconcile, directive.Disabled)
			},
		},
		"ssa: Ignore written on the live object": {
			prefix: "ignored",
			edit:   func(f *fixture, t *testing.T, name string) { f.annotate(t, name, directive.SyncdSSA, "Ignore") },
		},
	}
	// Four objects a case make one LIST of the namespace's ConfigMaps
	// (at least listThreshold of them); one a case, a GET each. With a
	// read ahead (a one-shot syncd apply), the LIST runs before the plan
	// exists and Begin reads only what it could not settle.
	for _, c := range []struct {
		per   int
		ahead bool
	}{{4, false}, {1, false}, {4, true}} {
		per := c.per
		t.Run(fmt.Sprintf("%d objects a case, read ahead %v", per, c.ahead), func(t *testing.T) {
			f := newFixture(t, config.App{}, Options{NoWatch: true})
			ctx := context.Background()
			caseOf := map[string]string{}
			var names []string
			for name, tc := range tests {
				for i := range per {
					n := fmt.Sprintf("%s-%d", tc.prefix, i)
					names = append(names, n)
					caseOf[n] = name
				}
			}
			plan := f.plan(f.cms(names...)...)
			f.mustSync(plan)
			for _, n := range names {
				tests[caseOf[n]].edit(f, t, n)
			}

			var ahead *Ahead
			if c.ahead {
				ahead = f.m.ReadAhead(ctx, invApp(f.app))
				defer ahead.Stop()
			}
			run, err := f.m.BeginAhead(ctx, ahead, invApp(f.app), plan, false)
			if err != nil {
				t.Fatal(err)
			}
			for i := range plan.Objects {
				obj := &plan.Objects[i]
				tc := tests[caseOf[obj.Ref.Name]]
				live, err := env.Clientset(t).CoreV1().ConfigMaps(f.ns).Get(ctx, obj.Ref.Name, metav1.GetOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if kept := run.known[KeyOf(obj.Ref)].meta != nil; kept == tc.unchanged {
					t.Errorf("%s: Begin kept its metadata = %v, want %v", obj.Ref.Name, kept, !tc.unchanged)
				}
				rv, ok := run.Unchanged(ctx, obj)
				if ok != tc.unchanged || (ok && rv != live.ResourceVersion) {
					t.Errorf("%s: Unchanged = %q, %v; want %q, %v", obj.Ref.Name, rv, ok, live.ResourceVersion, tc.unchanged)
				}
			}
		})
	}
}

// setData sets data[key] of ConfigMap name as another manager (an Update,
// which takes the field from whoever owned it) and returns its new
// resourceVersion.
func (f *fixture) setData(t *testing.T, name, key, value string) string {
	t.Helper()
	ctx := context.Background()
	cms := env.Clientset(t).CoreV1().ConfigMaps(f.ns)
	cm, err := cms.Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	cm.Data[key] = value
	edited, err := cms.Update(ctx, cm, metav1.UpdateOptions{FieldManager: "someone-else"})
	if err != nil {
		t.Fatal(err)
	}
	return edited.ResourceVersion
}

// annotate writes annotation key: value on ConfigMap name as kubectl
// annotate does (a merge patch of another manager) and returns its new
// resourceVersion.
func (f *fixture) annotate(t *testing.T, name, key, value string) string {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	cm, err := env.Clientset(t).CoreV1().ConfigMaps(f.ns).Patch(context.Background(), name, types.MergePatchType, []byte(patch), metav1.PatchOptions{FieldManager: "kubectl-annotate"})
	if err != nil {
		t.Fatal(err)
	}
	return cm.ResourceVersion
}

// editCached sets data[key] of ConfigMap obj as another manager and waits
// until the watch cache has seen the write.
func (f *fixture) editCached(t *testing.T, obj *planner.Object, key, value string) {
	t.Helper()
	f.waitCached(t, obj.Ref.Name, f.setData(t, obj.Ref.Name, key, value))
}

// TestLiveDirectiveExcludes: a member as syncd left it that someone marks
// reconcile: disabled in the cluster (kubectl annotate, which leaves
// syncd's managedFields entries alone) is excluded by the next sync, not
// skipped as unchanged, with and without a watch cache.
func TestLiveDirectiveExcludes(t *testing.T) {
	for name, noWatch := range map[string]bool{"watch cache": false, "no watch": true} {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, config.App{}, Options{NoWatch: noWatch})
			plan := f.plan(f.cms("a", "b")...)
			if noWatch {
				f.mustSync(plan)
			} else {
				f.converge(t, plan)
			}
			rv := f.annotate(t, "a", directive.SyncdReconcile, directive.Disabled)
			if !noWatch {
				f.waitCached(t, "a", rv)
			}
			cs, _, err := f.sync(context.Background(), plan)
			if err != nil {
				t.Fatal(err)
			}
			var got []string
			for _, c := range cs.Changes {
				got = append(got, c.String())
			}
			want := []string{
				"ConfigMap " + f.ns + "/a excluded: reconcile disabled (syncd.dev/reconcile: disabled on the live object)",
				"ConfigMap " + f.ns + "/b unchanged",
			}
			if diff := cmp.Diff(want, got); diff != "" {
				t.Errorf("changes (-want +got):\n%s", diff)
			}
		})
	}
}

// TestBeginUsesWhatAheadRead: Begin given a read ahead judges the members
// the ahead LIST found as it found them, and reads what it cannot settle:
// a member deleted before the LIST is absent, one edited after it is
// judged as read (as an edit landing just after Begin's own read would
// be, and healed by the next sync), one Git changed since is read again,
// and a plan object the inventory does not record is read by Begin.
func TestBeginUsesWhatAheadRead(t *testing.T) {
	f := newFixture(t, config.App{}, Options{NoWatch: true})
	ctx := context.Background()
	var names []string
	for i := range listThreshold {
		names = append(names, fmt.Sprintf("cm-%02d", i))
	}
	plan := f.plan(f.cms(names...)...)
	f.mustSync(plan)
	cms := env.Clientset(t).CoreV1().ConfigMaps(f.ns)
	if err := cms.Delete(ctx, "cm-00", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	before, err := cms.Get(ctx, "cm-01", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}

	ahead := f.m.ReadAhead(ctx, invApp(f.app))
	defer ahead.Stop()
	if _, _, ok := ahead.result(invApp(f.app)); !ok {
		t.Fatalf("the read ahead failed: %v", ahead.err)
	}
	f.setData(t, "cm-01", "k", "edit")
	next := f.plan(append(f.cms(names[:len(names)-1]...),
		"apiVersion: v1\nkind: ConfigMap\nmetadata: {name: "+names[len(names)-1]+"}\ndata: {k: changed}\n",
		f.cm("new"))...)
	if _, err := cms.Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "new"}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	run, err := f.m.BeginAhead(ctx, ahead, invApp(f.app), next, false)
	if err != nil {
		t.Fatal(err)
	}
	for i := range next.Objects {
		obj := &next.Objects[i]
		s, read := run.known[KeyOf(obj.Ref)]
		rv, unchanged := run.Unchanged(ctx, obj)
		switch name := obj.Ref.Name; name {
		case "cm-00":
			if !read || s != nil {
				t.Errorf("%s, deleted before the read ahead: known %v (read %v); want absent", name, s, read)
			}
		case "cm-01":
			if !unchanged || rv != before.ResourceVersion {
				t.Errorf("%s, edited after the read ahead: Unchanged = %q, %v; want %q, true (as read)", name, rv, unchanged, before.ResourceVersion)
			}
		case names[len(names)-1], "new":
			if !read || s == nil || s.meta == nil || unchanged {
				t.Errorf("%s, changed in Git or new to the inventory: known %+v (read %v), Unchanged %v; want its metadata read by Begin", name, s, read, unchanged)
			}
		default:
			if !unchanged {
				t.Errorf("%s, as syncd left it: not Unchanged", name)
			}
		}
	}
}
