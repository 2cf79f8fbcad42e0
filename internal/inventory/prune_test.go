package inventory

import (
	"context"
	"slices"
	"sort"
	"testing"
	"time"

	"github.com/google/go-cmp/cmp"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"

	"syncd.dev/syncd/internal/applier"
	"syncd.dev/syncd/internal/config"
)

func ptr[T any](v T) *T { return &v }

// outcome is what a prune test checks.
type outcome struct {
	Refused  Reason
	Deleted  []string
	Orphaned []string
	Spared   map[string]Reason
	Present  []string // ConfigMaps in the namespace afterwards
	Members  []string // the inventory afterwards
}

func outcomeOf(f *fixture, rep *Report) outcome {
	o := outcome{Deleted: names(rep.Deleted), Orphaned: names(rep.Orphaned), Present: f.presentCMs(), Members: f.members()}
	if rep.Refused != nil {
		o.Refused = rep.Refused.Reason
	}
	for _, s := range rep.Spared {
		if o.Spared == nil {
			o.Spared = map[string]Reason{}
		}
		o.Spared[s.Object.Name] = s.Reason
	}
	return o
}

func spared(reason Reason, names ...string) map[string]Reason {
	out := map[string]Reason{}
	for _, n := range names {
		out[n] = reason
	}
	return out
}

// takeOver renames the app's managedFields entries on a ConfigMap to
// manager, as if someone had taken every field over from syncd.
func takeOver(t *testing.T, f *fixture, name, manager string) {
	t.Helper()
	ctx := context.Background()
	cs := env.Clientset(t)
	live, err := cs.CoreV1().ConfigMaps(f.ns).Get(ctx, name, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	for i := range live.ManagedFields {
		if live.ManagedFields[i].Manager == f.app.DefaultManager() {
			live.ManagedFields[i].Manager = manager
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(f.ns).Update(ctx, live, metav1.UpdateOptions{}); err != nil {
		t.Fatal(err)
	}
}

func TestPruneGuards(t *testing.T) {
	abcd := []string{"a", "b", "c", "d"}
	abcdefgh := []string{"a", "b", "c", "d", "e", "f", "g", "h"}
	tests := map[string]struct {
		app     config.App
		opts    Options
		before  func(t *testing.T, f *fixture) // before the first sync
		between func(t *testing.T, f *fixture) // after the first sync
		first   []string
		next    []string
		want    outcome
		metric  Reason
	}{
		"an object removed from Git is deleted": {
			first: abcd, next: []string{"a", "b", "c"},
			want: outcome{Deleted: []string{"d"}, Present: []string{"a", "b", "c"}, Members: []string{"a", "b", "c"}},
		},
		"an empty render prunes nothing": {
			first: abcd, next: nil,
			want:   outcome{Refused: ReasonEmptyRender, Spared: spared(ReasonEmptyRender, abcd...), Present: abcd, Members: abcd},
			metric: ReasonEmptyRender,
		},
		"an empty render prunes everything with allowEmpty": {
			app:   config.App{AppSpec: config.AppSpec{AllowEmpty: true, PruneBudget: ptr(100)}},
			first: abcd, next: nil,
			want: outcome{Deleted: abcd},
		},
		"a prune over the budget is refused whole": {
			first: abcdefgh, next: []string{"a", "b", "c", "d"},
			want:   outcome{Refused: ReasonBudget, Spared: spared(ReasonBudget, "e", "f", "g", "h"), Present: abcdefgh, Members: abcdefgh},
			metric: ReasonBudget,
		},
		"the app's budget allows it": {
			app:   config.App{AppSpec: config.AppSpec{PruneBudget: ptr(50)}},
			first: abcdefgh, next: []string{"a", "b", "c", "d"},
			want: outcome{Deleted: []string{"e", "f", "g", "h"}, Present: abcd, Members: abcd},
		},
		"the run's budget overrides the app's": {
			app:   config.App{AppSpec: config.AppSpec{PruneBudget: ptr(50)}},
			opts:  Options{PruneBudget: ptr(10)},
			first: abcdefgh, next: []string{"a", "b", "c", "d"},
			want:   outcome{Refused: ReasonBudget, Spared: spared(ReasonBudget, "e", "f", "g", "h"), Present: abcdefgh, Members: abcdefgh},
			metric: ReasonBudget,
		},
		"prune: false keeps the inventory and deletes nothing": {
			app:   config.App{AppSpec: config.AppSpec{Prune: ptr(false)}},
			first: abcd, next: []string{"a", "b", "c"},
			want:   outcome{Refused: ReasonDisabled, Spared: spared(ReasonDisabled, "d"), Present: abcd, Members: abcd},
			metric: ReasonDisabled,
		},
		"a failed apply prunes nothing": {
			first: abcd, next: []string{"a", "b", "c"},
			between: func(t *testing.T, f *fixture) {
				// Another manager takes a's data with another value: syncd's
				// next apply of a conflicts.
				cs := env.Clientset(t)
				body := `{"apiVersion":"v1","kind":"ConfigMap","metadata":{"name":"a"},"data":{"k":"theirs"}}`
				taken, err := cs.CoreV1().ConfigMaps(f.ns).Patch(context.Background(), "a", types.ApplyPatchType, []byte(body), metav1.PatchOptions{FieldManager: "other", Force: ptr(true)})
				if err != nil {
					t.Fatal(err)
				}
				// The next sync judges a from the watch cache: let it see
				// the change, as a daemon's next reconcile would.
				f.waitCached(t, "a", taken.ResourceVersion)
			},
			want:   outcome{Refused: ReasonApplyIncomplete, Spared: spared(ReasonApplyIncomplete, "d"), Present: abcd, Members: abcd},
			metric: ReasonApplyIncomplete,
		},
		"an adopted object is orphaned": {
			first: abcd, next: []string{"a", "b", "c"},
			before: func(t *testing.T, f *fixture) {
				cs := env.Clientset(t)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Data: map[string]string{"k": "d", "extra": "kept"}}
				if _, err := cs.CoreV1().ConfigMaps(f.ns).Create(context.Background(), cm, metav1.CreateOptions{FieldManager: "before-syncd"}); err != nil {
					t.Fatal(err)
				}
			},
			want: outcome{Orphaned: []string{"d"}, Present: abcd, Members: []string{"a", "b", "c"}},
		},
		"an adopted object is deleted with adopted: delete": {
			app:   config.App{AppSpec: config.AppSpec{Adopted: config.AdoptedDelete}},
			first: abcd, next: []string{"a", "b", "c"},
			before: func(t *testing.T, f *fixture) {
				cs := env.Clientset(t)
				cm := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Data: map[string]string{"k": "d"}}
				if _, err := cs.CoreV1().ConfigMaps(f.ns).Create(context.Background(), cm, metav1.CreateOptions{FieldManager: "before-syncd"}); err != nil {
					t.Fatal(err)
				}
			},
			want: outcome{Deleted: []string{"d"}, Present: []string{"a", "b", "c"}, Members: []string{"a", "b", "c"}},
		},
		"an object no syncd manager owns any more is not deleted": {
			first: abcd, next: []string{"a", "b", "c"},
			between: func(t *testing.T, f *fixture) {
				takeOver(t, f, "d", "other")
			},
			want:   outcome{Spared: spared(ReasonUnowned, "d"), Present: abcd, Members: abcd},
			metric: ReasonUnowned,
		},
		"an object without the part-of label is not deleted": {
			first: abcd, next: []string{"a", "b", "c"},
			between: func(t *testing.T, f *fixture) {
				cs := env.Clientset(t)
				p := `[{"op":"remove","path":"/metadata/labels/applyset.kubernetes.io~1part-of"}]`
				if _, err := cs.CoreV1().ConfigMaps(f.ns).Patch(context.Background(), "d", types.JSONPatchType, []byte(p), metav1.PatchOptions{}); err != nil {
					t.Fatal(err)
				}
			},
			want:   outcome{Spared: spared(ReasonNotMember, "d"), Present: abcd, Members: abcd},
			metric: ReasonNotMember,
		},
	}
	for name, tc := range tests {
		t.Run(name, func(t *testing.T) {
			f := newFixture(t, tc.app, tc.opts)
			if tc.before != nil {
				tc.before(t, f)
			}
			f.mustSync(f.plan(f.cms(tc.first...)...))
			if tc.between != nil {
				tc.between(t, f)
			}
			_, rep, err := f.sync(context.Background(), f.plan(f.cms(tc.next...)...))
			if err != nil {
				t.Fatalf("sync: %v", err)
			}
			got := outcomeOf(f, rep)
			if diff := cmp.Diff(tc.want, got); diff != "" {
				t.Errorf("outcome (-want +got):\n%s\nreport: %s", diff, rep)
			}
			if tc.metric != "" {
				if n := f.blocked(tc.metric); n != 1 {
					t.Errorf("syncd_prune_blocked_total{reason=%q} = %v, want 1", tc.metric, n)
				}
			}
			if rep.Refused != nil && rep.Refused.Message == "" {
				t.Errorf("refusal without a message")
			}
			for _, s := range rep.Spared {
				if s.Message == "" {
					t.Errorf("%s spared without a message", s.Object)
				}
			}
		})
	}
}

// TestOrphanKeepsValues checks that an orphaned object keeps every value,
// loses the part-of label and the app's managers, and is left alone by the
// next runs.
func TestOrphanKeepsValues(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	ctx := context.Background()
	cs := env.Clientset(t)
	pre := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Data: map[string]string{"k": "d", "extra": "kept"}}
	if _, err := cs.CoreV1().ConfigMaps(f.ns).Create(ctx, pre, metav1.CreateOptions{FieldManager: "before-syncd"}); err != nil {
		t.Fatal(err)
	}
	// Git shares k and adds a key only syncd owns.
	d := "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: d}\ndata: {k: d, added: by-git}\n"
	f.mustSync(f.plan(append(f.cms("a", "b", "c"), d)...))
	rep := f.mustSync(f.plan(f.cms("a", "b", "c")...))
	if diff := cmp.Diff([]string{"d"}, names(rep.Orphaned)); diff != "" {
		t.Fatalf("orphaned (-want +got):\n%s", diff)
	}
	live, err := cs.CoreV1().ConfigMaps(f.ns).Get(ctx, "d", metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if diff := cmp.Diff(map[string]string{"k": "d", "extra": "kept", "added": "by-git"}, live.Data); diff != "" {
		t.Errorf("data after orphaning (-want +got):\n%s", diff)
	}
	if v, ok := live.Labels[LabelPartOf]; ok {
		t.Errorf("part-of label still there: %q", v)
	}
	var managers []string
	for _, e := range live.ManagedFields {
		managers = append(managers, e.Manager)
	}
	if slices.Contains(managers, f.app.DefaultManager()) {
		t.Errorf("managers after orphaning: %v, want no %s", managers, f.app.DefaultManager())
	}
	for k := range live.Annotations {
		if k == applierManagersKey(f.app.Name) {
			t.Errorf("managers annotation %s still there", k)
		}
	}
	// Another run leaves it alone.
	rep = f.mustSync(f.plan(f.cms("a", "b", "c")...))
	if len(rep.Deleted)+len(rep.Orphaned)+len(rep.Spared) != 0 {
		t.Errorf("second run touched the orphan: %s", rep)
	}
	if !f.exists(configMaps, f.ns, "d") {
		t.Errorf("orphan deleted")
	}
}

func applierManagersKey(app string) string { return "managers.syncd.dev/" + app }

// TestProtectedKinds checks that Namespaces and PVCs are deleted only with
// syncd.dev/prune: allow.
func TestProtectedKinds(t *testing.T) {
	f := newFixture(t, config.App{AppSpec: config.AppSpec{PruneBudget: ptr(100)}}, Options{})
	nsName := f.ns + "-owned"
	nsAllowed := f.ns + "-allowed"
	t.Cleanup(func() {
		cs := env.Clientset(t)
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), nsName, metav1.DeleteOptions{})
		_ = cs.CoreV1().Namespaces().Delete(context.Background(), nsAllowed, metav1.DeleteOptions{})
	})
	docs := []string{
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: " + nsName + "}\n",
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: " + nsAllowed + ", annotations: {syncd.dev/prune: allow}}\n",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: data}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
		"apiVersion: v1\nkind: PersistentVolumeClaim\nmetadata: {name: scratch, annotations: {syncd.dev/prune: allow}}\nspec: {accessModes: [ReadWriteOnce], resources: {requests: {storage: 1Gi}}}\n",
		f.cm("keep"),
	}
	f.mustSync(f.plan(docs...))
	rep := f.mustSync(f.plan(f.cm("keep")))
	got := outcomeOf(f, rep)
	want := outcome{
		Deleted: []string{"scratch", nsAllowed},
		Spared:  map[string]Reason{nsName: ReasonProtected, "data": ReasonProtected},
		Present: []string{"keep"},
		Members: []string{"data", "keep", nsName},
	}
	sort.Strings(want.Members)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("outcome (-want +got):\n%s\nreport: %s", diff, rep)
	}
	pvcs := configMaps
	pvcs.Resource = "persistentvolumeclaims"
	nss := configMaps
	nss.Resource = "namespaces"
	if !f.exists(pvcs, f.ns, "data") || f.exists(pvcs, f.ns, "scratch") {
		t.Errorf("PVCs: data present %v (want true), scratch present %v (want false)", f.exists(pvcs, f.ns, "data"), f.exists(pvcs, f.ns, "scratch"))
	}
	if !f.exists(nss, "", nsName) || f.exists(nss, "", nsAllowed) {
		t.Errorf("namespaces: %s present %v (want true), %s present %v (want false)", nsName, f.exists(nss, "", nsName), nsAllowed, f.exists(nss, "", nsAllowed))
	}
	if n := f.blocked(ReasonProtected); n != 2 {
		t.Errorf("syncd_prune_blocked_total{reason=protected} = %v, want 2", n)
	}
}

// TestDryRunPrunesNothing checks that a dry run reports what prune would
// do and changes neither the cluster nor the inventory.
func TestDryRunPrunesNothing(t *testing.T) {
	f := newFixture(t, config.App{}, Options{})
	f.mustSync(f.plan(f.cms("a", "b", "c", "d")...))
	plan := f.plan(f.cms("a", "b", "c")...)
	ctx := context.Background()
	run, err := f.m.Begin(ctx, invApp(f.app), plan, true)
	if err != nil {
		t.Fatal(err)
	}
	dry, err := applier.New(f.dyn, f.mapper, applier.Options{DryRun: true})
	if err != nil {
		t.Fatal(err)
	}
	cs, err := dry.Apply(ctx, plan, run.Hooks(applier.ApplyOptions{RecordManagers: true}))
	rep, ferr := run.Finish(ctx, cs, err)
	if err != nil || ferr != nil {
		t.Fatalf("dry run: %v, %v", err, ferr)
	}
	got := outcomeOf(f, rep)
	want := outcome{Deleted: []string{"d"}, Present: []string{"a", "b", "c", "d"}, Members: []string{"a", "b", "c", "d"}}
	if diff := cmp.Diff(want, got); diff != "" {
		t.Errorf("dry run (-want +got):\n%s", diff)
	}
	if !rep.DryRun || rep.InventoryWritten {
		t.Errorf("report DryRun=%v InventoryWritten=%v, want true, false", rep.DryRun, rep.InventoryWritten)
	}
}

// TestPruneCascades checks what the garbage collector does after a prune:
// a deleted member's dependents go with it (background propagation), an
// orphaned member's dependents stay, and a Namespace pruned with the
// opt-in annotation is really emptied and removed by the namespace
// controller.
func TestPruneCascades(t *testing.T) {
	f := newFixture(t, config.App{AppSpec: config.AppSpec{PruneBudget: ptr(100)}}, Options{})
	ctx := context.Background()
	cs := env.Clientset(t)
	// "kept" existed before syncd: adopting it means a prune orphans it.
	if _, err := cs.CoreV1().ConfigMaps(f.ns).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "kept"}, Data: map[string]string{"k": "kept"}}, metav1.CreateOptions{FieldManager: "before-syncd"}); err != nil {
		t.Fatal(err)
	}
	child := f.ns + "-child"
	t.Cleanup(func() { _ = cs.CoreV1().Namespaces().Delete(context.Background(), child, metav1.DeleteOptions{}) })
	docs := append(f.cms("owner", "kept", "stay"),
		"apiVersion: v1\nkind: Namespace\nmetadata: {name: "+child+", annotations: {syncd.dev/prune: allow}}\n")
	f.mustSync(f.plan(docs...))

	// Dependents syncd never declared: one owned by each of the two
	// ConfigMaps that will leave Git, and one living in the Namespace.
	for _, owner := range []string{"owner", "kept"} {
		live, err := cs.CoreV1().ConfigMaps(f.ns).Get(ctx, owner, metav1.GetOptions{})
		if err != nil {
			t.Fatal(err)
		}
		dep := &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{
			Name:            owner + "-dependent",
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "v1", Kind: "ConfigMap", Name: owner, UID: live.UID}},
		}}
		if _, err := cs.CoreV1().ConfigMaps(f.ns).Create(ctx, dep, metav1.CreateOptions{FieldManager: "someone-else"}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := cs.CoreV1().ConfigMaps(child).Create(ctx, &corev1.ConfigMap{ObjectMeta: metav1.ObjectMeta{Name: "inside"}}, metav1.CreateOptions{FieldManager: "someone-else"}); err != nil {
		t.Fatal(err)
	}

	rep := f.mustSync(f.plan(f.cm("stay")))
	if diff := cmp.Diff(sorted([]string{child, "owner"}), sorted(names(rep.Deleted))); diff != "" {
		t.Errorf("deleted (-want +got):\n%s\nreport: %s", diff, rep)
	}
	if diff := cmp.Diff([]string{"kept"}, names(rep.Orphaned)); diff != "" {
		t.Errorf("orphaned (-want +got):\n%s\nreport: %s", diff, rep)
	}

	gone := func(get func() error) func(context.Context) (bool, error) {
		return func(context.Context) (bool, error) {
			err := get()
			if apierrors.IsNotFound(err) {
				return true, nil
			}
			return false, err
		}
	}
	if err := wait.PollUntilContextTimeout(ctx, 100*time.Millisecond, time.Minute, true, gone(func() error {
		_, err := cs.CoreV1().ConfigMaps(f.ns).Get(ctx, "owner-dependent", metav1.GetOptions{})
		return err
	})); err != nil {
		t.Errorf("the pruned ConfigMap's dependent was not garbage collected: %v", err)
	}
	if err := wait.PollUntilContextTimeout(ctx, 200*time.Millisecond, 2*time.Minute, true, gone(func() error {
		_, err := cs.CoreV1().Namespaces().Get(ctx, child, metav1.GetOptions{})
		return err
	})); err != nil {
		t.Errorf("the pruned Namespace was not removed by the namespace controller: %v", err)
	}
	// The collector has acted (owner-dependent is gone); the orphan's
	// dependent must still be there.
	if !f.exists(configMaps, f.ns, "kept-dependent") || !f.exists(configMaps, f.ns, "kept") {
		t.Errorf("orphaned ConfigMap or its dependent removed: present %v", f.presentCMs())
	}
	if diff := cmp.Diff([]string{"stay"}, f.members()); diff != "" {
		t.Errorf("inventory (-want +got):\n%s", diff)
	}
}

func sorted(s []string) []string { slices.Sort(s); return s }
